"""The verified local cache of a remote model repository (`CachedArtifactStore`), over a source held in
memory: what is fetched, when, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from infaas.core.errors import NotFound
from infaas.data.artifacts import (
    ArtifactCorrupt,
    CachedArtifactStore,
    LocalArtifactStore,
    Sink,
    digest_of,
)

DATA = b"variant bytes \x00\x01" * 1000
DIGEST = digest_of(DATA)


class Source:
    """The registry as a dict; `lie` makes it answer other bytes than those asked for."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.downloads: list[str] = []
        self.lie: bytes | None = None

    def download(self, digest: str, into: Sink) -> None:
        self.downloads.append(digest)
        if digest not in self.blobs:
            raise NotFound(f"no artifact {digest}")
        data = self.lie if self.lie is not None else self.blobs[digest]
        for start in range(0, len(data), 4096):  # in chunks, as over HTTP
            into.write(data[start : start + 4096])

    def upload(self, digest: str, data: bytes) -> None:
        assert digest_of(data) == digest
        self.blobs[digest] = data

    def has(self, digest: str) -> bool:
        return digest in self.blobs


@pytest.fixture
def source() -> Source:
    return Source()


@pytest.fixture
def cache(tmp_path: Path) -> LocalArtifactStore:
    return LocalArtifactStore(tmp_path / "cache")


def test_a_fetched_artifact_is_verified_cached_and_fetched_once(
    source: Source, cache: LocalArtifactStore
) -> None:
    source.blobs[DIGEST] = DATA
    store = CachedArtifactStore(cache, source)
    path = store.path(DIGEST)
    assert path.read_bytes() == DATA
    assert path == cache.path(DIGEST)  # in the cache's own layout, read-only like the repository's
    assert store.get(DIGEST) == DATA
    assert store.path(DIGEST) == path
    assert source.downloads == [DIGEST]


def test_bytes_that_do_not_hash_to_the_digest_are_refused_and_not_kept(
    source: Source, cache: LocalArtifactStore
) -> None:
    source.blobs[DIGEST] = DATA
    source.lie = DATA[:-1] + b"X"
    store = CachedArtifactStore(cache, source)
    with pytest.raises(ArtifactCorrupt) as caught:
        store.path(DIGEST)
    assert caught.value.status == 503
    assert caught.value.details["got"] == digest_of(source.lie)
    assert not cache.exists(DIGEST)
    assert [p for p in cache.root.rglob("*") if p.is_file()] == []  # no temporary file left either
    source.lie = None  # the source heals: the next load fetches again and succeeds
    assert store.path(DIGEST).read_bytes() == DATA


def test_absent_and_malformed_digests(source: Source, cache: LocalArtifactStore) -> None:
    store = CachedArtifactStore(cache, source)
    with pytest.raises(NotFound):
        store.path(DIGEST)
    with pytest.raises(NotFound):
        store.path("../../etc/passwd")
    assert source.downloads == [DIGEST]  # a malformed name never reaches the source
    assert [p for p in cache.root.rglob("*") if p.is_file()] == []


def test_put_keeps_a_copy_and_uploads(source: Source, cache: LocalArtifactStore) -> None:
    store = CachedArtifactStore(cache, source)
    assert store.put(DATA) == DIGEST
    assert source.blobs == {DIGEST: DATA}
    assert cache.exists(DIGEST)
    store.path(DIGEST)
    assert source.downloads == []  # what this machine made it need not fetch back


def test_the_source_decides_existence_and_delete_drops_only_the_cached_copy(
    source: Source, cache: LocalArtifactStore
) -> None:
    store = CachedArtifactStore(cache, source)
    store.put(DATA)
    del source.blobs[DIGEST]  # the model was deleted at the registry
    assert cache.exists(DIGEST)
    assert not store.exists(DIGEST)
    source.blobs[DIGEST] = DATA
    store.delete(DIGEST)
    assert not cache.exists(DIGEST)
    assert source.blobs == {DIGEST: DATA}
