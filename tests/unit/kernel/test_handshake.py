"""The push connection's hello frame (`infaas.wire.handshake`) and the key comparison under it."""

from __future__ import annotations

from infaas.core.credentials import internal_headers, key_matches
from infaas.wire.frames import encode_frame
from infaas.wire.handshake import HELLO_PREFIX, encode_hello, hello_matches


def test_a_hello_with_the_key_matches_in_bytes_and_in_a_view() -> None:
    hello = encode_hello("int_secret")
    assert hello.startswith(HELLO_PREFIX)
    assert hello_matches(hello, b"int_secret")
    assert hello_matches(memoryview(b"xx" + hello)[2:], b"int_secret")


def test_a_wrong_or_truncated_key_does_not_match() -> None:
    assert not hello_matches(encode_hello("int_other"), b"int_secret")
    assert not hello_matches(encode_hello("int_secre"), b"int_secret")
    assert not hello_matches(encode_hello("int_secret") + b"x", b"int_secret")


def test_a_query_frame_is_not_a_hello() -> None:
    assert not hello_matches(encode_frame({"id": "q1", "variant": "m.a"}, {}), b"int_secret")
    assert not hello_matches(b"", b"int_secret")


def test_an_empty_key_matches_nothing_not_even_an_empty_hello() -> None:
    assert not hello_matches(encode_hello(""), b"")
    assert not key_matches(b"", b"")
    assert internal_headers("") == {}
    assert internal_headers("k") == {"x-infaas-internal": "k"}
