"""The first frame of a push connection (`infaas.wire.connection`): the dispatcher proves it holds the
suite's internal key before the executor reads any query frame from it.

`HELLO_PREFIX + key`: sent once per connection, in the same write as the queries behind it, so opening
a connection costs no round trip. The executor closes a connection whose first frame is anything else;
after the hello, frames are handled exactly as before.
"""

from __future__ import annotations

from infaas.core.credentials import key_matches

HELLO_PREFIX = b"infaas-push-hello/1 "


def encode_hello(key: str) -> bytes:
    """The hello frame that opens a connection for a holder of `key`."""
    return HELLO_PREFIX + key.encode()


def hello_matches(frame: bytes | memoryview, key: bytes) -> bool:
    """Whether `frame` is a hello carrying `key` (constant time in the key; an empty key matches no hello)."""
    data = bytes(frame)
    if not data.startswith(HELLO_PREFIX):
        return False
    return key_matches(data[len(HELLO_PREFIX) :], key)
