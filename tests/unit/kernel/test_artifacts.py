"""The local content-addressed artifact store."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from infaas.core.errors import NotFound
from infaas.data.artifacts import LocalArtifactStore, digest_of

DATA = b"model bytes \x00\x01\x02"
DIGEST = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def store(tmp_path: Path) -> LocalArtifactStore:
    return LocalArtifactStore(tmp_path / "artifacts")


def all_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_digest_is_sha256_hex() -> None:
    assert digest_of(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert digest_of(DATA) == DIGEST


def test_root_is_created(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b"
    LocalArtifactStore(root)
    assert root.is_dir()


def test_put_returns_sha256_and_stores_under_prefix(store: LocalArtifactStore) -> None:
    assert store.put(DATA) == DIGEST
    expected = store.root / DIGEST[:2] / DIGEST
    assert store.path(DIGEST) == expected
    assert expected.read_bytes() == DATA
    assert store.get(DIGEST) == DATA
    assert store.exists(DIGEST)


def test_put_is_idempotent(store: LocalArtifactStore) -> None:
    first = store.put(DATA)
    mtime = store.path(first).stat().st_mtime_ns
    assert store.put(DATA) == first
    assert all_files(store.root) == [store.path(first)]
    assert store.path(first).stat().st_mtime_ns == mtime  # not rewritten


def test_different_bytes_get_different_digests(store: LocalArtifactStore) -> None:
    a = store.put(b"a")
    b = store.put(b"b")
    assert a != b
    assert store.get(a) == b"a"
    assert store.get(b) == b"b"


def test_empty_artifact(store: LocalArtifactStore) -> None:
    digest = store.put(b"")
    assert store.get(digest) == b""


def test_files_are_read_only_after_put(store: LocalArtifactStore) -> None:
    mode = stat.S_IMODE(store.path(store.put(DATA)).stat().st_mode)
    assert mode == 0o444


def test_no_temporary_files_are_left(store: LocalArtifactStore) -> None:
    digests = {store.put(bytes([i]) * 100) for i in range(5)}
    store.put(bytes([0]) * 100)
    names = [p.name for p in all_files(store.root)]
    assert sorted(names) == sorted(digests)
    assert not any(name.startswith(".tmp-") for name in names)


def test_failed_write_leaves_no_temporary_file(
    store: LocalArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*_args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        store.put(DATA)
    assert all_files(store.root) == []
    monkeypatch.undo()
    assert not store.exists(DIGEST)


def test_unknown_digest_is_not_found(store: LocalArtifactStore) -> None:
    unknown = "f" * 64
    assert not store.exists(unknown)
    with pytest.raises(NotFound) as info:
        store.get(unknown)
    assert info.value.status == 404
    with pytest.raises(NotFound):
        store.path(unknown)


def test_delete(store: LocalArtifactStore) -> None:
    digest = store.put(DATA)
    store.delete(digest)
    assert not store.exists(digest)
    with pytest.raises(NotFound):
        store.get(digest)
    store.delete(digest)  # absent is fine
    assert store.put(DATA) == digest  # and it can be stored again
    assert store.get(digest) == DATA


MALFORMED = [
    "../etc/passwd",
    "../../" + "a" * 58,
    "/etc/passwd",
    "a" * 63,
    "a" * 65,
    "A" * 64,  # upper case is not how digests are written
    "g" * 64,
    "",
    "aa/" + "a" * 61,
    "a" * 64 + "\n",
]


@pytest.mark.parametrize("digest", MALFORMED)
def test_malformed_digests_are_not_found(store: LocalArtifactStore, digest: str) -> None:
    with pytest.raises(NotFound):
        store.get(digest)
    with pytest.raises(NotFound):
        store.path(digest)


def test_path_traversal_cannot_reach_outside_the_root(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "root")
    secret = tmp_path / "secret"
    secret.write_bytes(b"do not touch")
    for digest in ["../secret", "../../secret", str(secret)]:
        with pytest.raises(NotFound):
            store.get(digest)
        with pytest.raises(NotFound):
            store.delete(digest)
        with pytest.raises(NotFound):
            store.exists(digest)
    assert secret.read_bytes() == b"do not touch"
