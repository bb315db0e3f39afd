"""Bounding a `.npz` (a zip) before anything decompresses it: a small upload must not expand into
seconds of CPU and hundreds of megabytes of memory (a "zip bomb").

The bound uses the sizes the archive declares: Python's zipfile never yields more than a member's
declared size (a member that would is reported corrupt by its CRC), so a declared size is an honest upper
bound on the memory that reading the member can take.
"""

from __future__ import annotations

import io
import zipfile

from infaas.core.errors import InvalidInput

MAX_MEMBERS = 256
"""More arrays than any model has inputs (plus labels): a many-member archive is refused unread."""

RATIO_FREE_BYTES = 16 * 1024 * 1024
"""Below this expanded size, any compression ratio is fine (labels and small sets compress well)."""

MAX_RATIO = 64.0
"""Above `RATIO_FREE_BYTES`, an archive that expands more than this many times its own size is refused:
real feature arrays compress a few times at most; 64 × is a bomb, not a dataset."""


def check_npz_bounds(data: bytes, *, max_expanded_bytes: int, what: str = "the .npz") -> int:
    """Refuse (422) a zip that would expand beyond `max_expanded_bytes` or by more than `MAX_RATIO`;
    returns the expanded size. A file that is not a zip is left for the reader to refuse."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError, OSError):
        return 0
    if len(infos) > MAX_MEMBERS:
        raise InvalidInput(f"{what} holds {len(infos)} arrays; at most {MAX_MEMBERS}", limit=MAX_MEMBERS)
    expanded = sum(info.file_size for info in infos)
    if expanded > max_expanded_bytes:
        raise InvalidInput(
            f"{what} expands to {expanded} bytes; at most {max_expanded_bytes}",
            expanded_bytes=expanded,
            limit=max_expanded_bytes,
        )
    ratio = expanded / max(1, len(data))
    if expanded > RATIO_FREE_BYTES and ratio > MAX_RATIO:
        raise InvalidInput(
            f"{what} expands {ratio:.0f} times its size ({len(data)} to {expanded} bytes); at most "
            f"{MAX_RATIO:.0f} times above {RATIO_FREE_BYTES} bytes",
            expanded_bytes=expanded,
            ratio=round(ratio, 1),
        )
    return expanded
