"""Writing a folder or a file so that a reader never sees it half-written."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import BinaryIO, Iterator


@contextlib.contextmanager
def atomic_dir(where: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``where``; when the block ends without an error it
    replaces ``where`` (a previous version is removed), otherwise it is removed and ``where``
    is left as it was."""
    where = Path(where)
    where.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{where.name}-", dir=where.parent))
    try:
        yield tmp
        if where.exists():
            shutil.rmtree(where, ignore_errors=True)
        tmp.rename(where)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def atomic_file(where: str | Path, mode: int = 0o644) -> Iterator[BinaryIO]:
    """Yield a binary file opened beside ``where`` (a temporary name in the same folder); when the
    block ends without an error it is given ``mode`` and renamed over ``where``, otherwise it is
    removed and ``where`` is left as it was."""
    where = Path(where)
    fd, name = tempfile.mkstemp(prefix=f".{where.name}.", suffix=".tmp", dir=where.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.chmod(tmp, mode)  # mkstemp makes the file private
        os.replace(tmp, where)
    finally:
        tmp.unlink(missing_ok=True)


def sha256_file(path: str | os.PathLike, block: int = 8 * 1024 * 1024) -> str:
    """The sha256 of a file's bytes, read in blocks (a model file or an evaluated split)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while chunk := fh.read(block):
            h.update(chunk)
    return h.hexdigest()
