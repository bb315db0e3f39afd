"""The model repository: an immutable, content-addressed artifact store.

Artifacts are addressed by the SHA-256 of their bytes, so storing the same file twice is free and a
variant's digest always names exactly the bytes that were profiled.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path

from infaas.core.errors import NotFound

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
