"""The model repository: an immutable, content-addressed artifact store.

Artifacts are addressed by the SHA-256 of their bytes, so storing the same file twice is free and a
variant's digest always names exactly the bytes that were profiled. The registry holds the repository
(`LocalArtifactStore`); a process on another machine keeps a verified local cache of it
(`CachedArtifactStore`), so no shared volume is needed.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Protocol

from infaas.core.errors import NotFound, Unavailable

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ArtifactStore(ABC):
    """Where model files, optimized variants and validation sets live."""

    @abstractmethod
    def put(self, data: bytes) -> str:
        """Store bytes; return their digest."""

    @abstractmethod
    def get(self, digest: str) -> bytes:
        """Bytes of an artifact; `NotFound` if absent."""

    @abstractmethod
    def path(self, digest: str) -> Path:
        """A local file holding the artifact (runtimes load from files)."""

    @abstractmethod
    def exists(self, digest: str) -> bool: ...

    @abstractmethod
    def delete(self, digest: str) -> None:
        """Remove an artifact; absent is fine (deletion is idempotent)."""


class LocalArtifactStore(ArtifactStore):
    """Artifacts as files `<root>/<aa>/<digest>`, written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def _file(self, digest: str) -> Path:
        if not _DIGEST.match(digest):
            raise NotFound(f"no artifact {digest!r}")
        return self.root / digest[:2] / digest

    def put(self, data: bytes) -> str:
        digest = digest_of(data)
        target = self._file(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        # Write to a temporary file in the same directory and rename: readers never see half a file.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o444)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def get(self, digest: str) -> bytes:
        try:
            return self._file(digest).read_bytes()
        except FileNotFoundError as exc:
            raise NotFound(f"no artifact {digest}") from exc

    def path(self, digest: str) -> Path:
        target = self._file(digest)
        if not target.exists():
            raise NotFound(f"no artifact {digest}")
        return target

    def exists(self, digest: str) -> bool:
        return self._file(digest).exists()

    def delete(self, digest: str) -> None:
        self._file(digest).unlink(missing_ok=True)


class Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


class ArtifactSource(Protocol):
    """Where a machine without the model repository on its disk gets artifacts: the registry's
    `/internal/artifacts/{digest}` (`infaas.clients.registry.RegistryClient`)."""

    def download(self, digest: str, into: Sink) -> None:
        """Write the artifact's bytes to `into`; `NotFound` if the source has none."""

    def upload(self, digest: str, data: bytes) -> None:
        """Store `data` under `digest` (the source checks the digest too)."""

    def has(self, digest: str) -> bool: ...


class ArtifactCorrupt(Unavailable):
    """What was fetched does not hash to the digest asked for: never loaded, never cached."""


class _Hashing:
    """A writer that hashes what passes through it, so a download is verified without reading it twice."""

    def __init__(self, fh: Sink) -> None:
        self.fh = fh
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.size += len(data)
        return self.fh.write(data)


class CachedArtifactStore(ArtifactStore):
    """A local cache in front of a remote model repository, for executors and profilers on a machine that
    does not share the registry's artifact directory. Artifacts are immutable and named by their digest,
    so a cached file never goes stale and a fetched one is checked against its name before it is used."""

    def __init__(self, cache: LocalArtifactStore, source: ArtifactSource) -> None:
        self.cache = cache
        self.source = source

    def put(self, data: bytes) -> str:
        digest = self.cache.put(data)
        self.source.upload(digest, data)  # a profiler's new variant: executors elsewhere fetch it by digest
        return digest

    def get(self, digest: str) -> bytes:
        return self.path(digest).read_bytes()

    def path(self, digest: str) -> Path:
        if self.cache.exists(digest):
            return self.cache.path(digest)
        target = self.cache._file(digest)  # NotFound for anything that is not a digest, before any request
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".fetch-")
        try:
            with os.fdopen(fd, "wb") as fh:
                writer = _Hashing(fh)
                self.source.download(digest, writer)
                fh.flush()
                os.fsync(fh.fileno())
            got = writer.sha.hexdigest()
            if got != digest:
                raise ArtifactCorrupt(
                    f"artifact {digest} fetched with the wrong content",
                    digest=digest,
                    got=got,
                    size=writer.size,
                )
            os.chmod(tmp, 0o444)
            os.replace(tmp, target)  # two fetches of one digest race harmlessly: the bytes are the same
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    def exists(self, digest: str) -> bool:
        # The source decides: a model deleted there is gone, whatever this cache still holds.
        return self.source.has(digest)

    def delete(self, digest: str) -> None:
        """Drop the cached copy only; the model repository is the registry's to change."""
        self.cache.delete(digest)
