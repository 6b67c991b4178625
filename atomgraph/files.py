"""Writing a folder so that a reader never sees it half-written."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Iterator


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
