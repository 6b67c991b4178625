"""A model shipped as data packages (atomgraph/local/packaged.py): parts found as installed
packages, assembled in order once, checked (size, sha256), re-used cheaply; the short name
``local:qwen2.5-1.5b`` wherever a model name goes, a client included. Small synthetic parts
(real installed packages on a temporary ``sys.path``), never the 1.1 GB model."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import logging
import os
import re
import sys

import pytest

from atomgraph.tools.access import client_model
from atomgraph.errors import ConfigError
from atomgraph.extras import MissingExtra
from atomgraph.local import packaged
from atomgraph.local.engine import LocalModelError
from atomgraph.local.packaged import QWEN_1_5B, PackagedModel, Part, assemble
from atomgraph.settings import Settings

SIZES = (300, 17, 1024)  # unequal, so an order mistake changes the file


def _install_parts(site, prefix: str, sizes=SIZES, version: str = "0.2.0") -> list[bytes]:
    """Installed data packages ``<prefix>_part<i>`` (a module with ``data/part<NN>.bin`` and a
    dist-info with its version) under ``site``; their bytes, in order."""
    blobs = []
    for i, size in enumerate(sizes, 1):
        blob = bytes((i * 31 + k) % 251 for k in range(size))
        pkg = site / f"{prefix}_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)
        info = site / f"{prefix}_part{i}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {prefix}-part{i}\nVersion: {version}\n")
        blobs.append(blob)
    return blobs


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """A packaged model over three installed synthetic parts, and its expected bytes."""
    site = tmp_path / "site"
    prefix = f"agtest{os.getpid()}_{tmp_path.name.replace('-', '_')}"
    blobs = _install_parts(site, prefix)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    whole = b"".join(blobs)
    spec = PackagedModel(name="tiny", title="a test model", extra="qwen", filename="tiny.gguf", size=len(whole),
                         sha256=hashlib.sha256(whole).hexdigest(),
                         parts=tuple(Part(f"{prefix}-part{i}", "0.2.0", f"{prefix}_part{i}", f"data/part{i:02d}.bin")
                                     for i in range(1, len(SIZES) + 1)))
    yield spec, whole, tmp_path / "models"
    for name in [m for m in sys.modules if m.startswith(prefix)]:
        del sys.modules[name]


def _progress(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "atomgraph.progress"]


def test_parts_are_assembled_in_order_once_with_a_line_per_part_and_reused(parts, caplog, monkeypatch):
    spec, whole, folder = parts
    caplog.set_level(logging.INFO)
    path = assemble(spec, folder)
    assert path == folder / "tiny.gguf" and path.read_bytes() == whole
    lines = _progress(caplog)
    assert [line.split(": part ")[1].split(",")[0] for line in lines if ": part " in line] == ["1/3", "2/3", "3/3"]
    assert "assembled and checked (size, sha256)" in lines[-1]
    assert sorted(p.name for p in folder.iterdir()) == ["tiny.gguf", "tiny.gguf.stamp.json"]  # no temporary left

    def no_hashing(_path):
        raise AssertionError("an unchanged file is re-used without hashing")

    real_hash = packaged.sha256_file
    monkeypatch.setattr(packaged, "sha256_file", no_hashing)
    caplog.clear()
    mtime = path.stat().st_mtime_ns
    assert assemble(spec, folder) == path and path.stat().st_mtime_ns == mtime and not _progress(caplog)

    # a part reinstalled (new mtime): the file is hashed once, found right, re-stamped, not rebuilt
    monkeypatch.setattr(packaged, "sha256_file", real_hash)
    first = packaged.part_files(spec)[0]
    os.utime(first, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns + 10**9))
    assert assemble(spec, folder) == path and path.stat().st_mtime_ns == mtime
    assert any("checking" in line for line in _progress(caplog))
    monkeypatch.setattr(packaged, "sha256_file", no_hashing)
    assert assemble(spec, folder) == path  # the new stamp holds


def test_a_sha_mismatch_is_refused_in_one_line_and_nothing_is_left(parts):
    spec, whole, folder = parts
    bad = dataclasses.replace(spec, sha256="0" * 64)
    with pytest.raises(LocalModelError) as err:
        assemble(bad, folder)
    msg = str(err.value)
    assert "\n" not in msg and f"sha256 {spec.sha256}, expected {'0' * 64}" in msg and "is deleted" in msg
    assert not list(folder.iterdir())  # the bad file is gone, no stamp, no temporary
    # parts that do not add up to the model's size: refused before anything is written
    with pytest.raises(MissingExtra, match=rf"hold {len(whole):,} bytes, the model {len(whole) + 1:,}"):
        assemble(dataclasses.replace(spec, size=len(whole) + 1), folder)
    assert not list(folder.iterdir())


def test_a_stale_file_is_replaced_and_a_failed_write_leaves_no_partial_file(parts, caplog, monkeypatch):
    spec, whole, folder = parts
    folder.mkdir()
    target = folder / "tiny.gguf"
    caplog.set_level(logging.INFO)
    for stale in (b"x" * len(whole), b"short"):  # same size, other bytes (hashed); another size
        target.write_bytes(stale)
        assert assemble(spec, folder).read_bytes() == whole
        (folder / "tiny.gguf.stamp.json").unlink()
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "sha256" in warned[0] and "size 5 bytes" in warned[1] and all("assembled again" in w for w in warned)

    target.unlink()
    import atomgraph.progress

    def fail_at_part_two(line, stream=None):
        if "part 2/3" in line:
            raise OSError("disk full")

    monkeypatch.setattr(atomgraph.progress, "say", fail_at_part_two)
    with pytest.raises(OSError, match="disk full"):
        assemble(spec, folder)
    assert not list(folder.iterdir())  # the temporary file is removed; no partial model under its name


def test_missing_or_other_version_parts_name_the_extra(parts, tmp_path, monkeypatch):
    spec, _, folder = parts
    other = dataclasses.replace(spec, parts=tuple(dataclasses.replace(p, version="0.3.0") for p in spec.parts))
    with pytest.raises(MissingExtra, match=r"another version: .*-part1 0\.2\.0 \(needs 0\.3\.0\)"):
        assemble(other, folder)
    gone = dataclasses.replace(spec, parts=(*spec.parts, Part("agtest-absent-part9", "0.2.0", "agtest_absent_part9",
                                                              "data/part09.bin")))
    with pytest.raises(MissingExtra, match=r"1 of 4 parts not installed \(agtest-absent-part9\)"):
        assemble(gone, folder)


@pytest.fixture
def qwen_absent(monkeypatch):
    """The real local:qwen2.5-1.5b entry, its 22 parts not installed (as in the test suite's environment)."""
    absent = tuple(dataclasses.replace(p, dist=f"agtest-absent-{p.dist}", module=f"agtest_absent_{p.module}")
                   for p in QWEN_1_5B.parts)
    monkeypatch.setitem(packaged.PACKAGED, QWEN_1_5B.name, dataclasses.replace(QWEN_1_5B, parts=absent))
    monkeypatch.setattr(packaged, "_CHECKED", {})


EXTRA_LINE = (r"^local:qwen2\.5-1\.5b \(Qwen2\.5-Coder-1\.5B-Instruct Q4_K_M, 22 data packages\) need the 'qwen' "
              r"extra: pip install 'atomgraph\[qwen\]'; 22 of 22 parts not installed \(.*and 19 more\)$")


def test_the_short_name_selects_the_packaged_model_wherever_a_model_name_goes(qwen_absent, monkeypatch):
    from atomgraph.graphs.registry import build_method
    from atomgraph.local.chat import ChatLocalLlama
    from atomgraph.models import chat_model, chat_model_named

    calls = [lambda: chat_model_named("local:qwen2.5-1.5b"),
             lambda: build_method("standard", model="local:qwen2.5-1.5b", settings=Settings(cache=False)).invoke(
                 {"question": "Who?"}),
             lambda: ChatLocalLlama(model_path="qwen2.5-1.5b").engine,
             lambda: chat_model("planner", Settings(planner_model="local:qwen2.5-1.5b", cache=False))]
    monkeypatch.setenv("ATOMGRAPH_MODEL", "local:qwen2.5-1.5b")
    calls.append(lambda: chat_model("answerer", Settings(cache=False)))
    for call in calls:
        with pytest.raises(MissingExtra) as err:
            call()
        assert re.fullmatch(EXTRA_LINE, str(err.value))  # one line (LangGraph adds its task as a note)
    assert ChatLocalLlama(model_path="qwen2.5-1.5b").model == "local:qwen2.5-1.5b"  # its name in records


def test_a_client_may_name_the_packaged_model_but_not_a_path(qwen_absent):
    from atomgraph.graphs.registry import build_method
    from atomgraph.testing import ScriptedChatModel

    settings = Settings(cache=False)
    assert client_model("local:qwen2.5-1.5b", settings) == "local:qwen2.5-1.5b"
    for name in ("local:./qwen2.5-1.5b", "local:qwen2.5-1.5b/../x", "local:qwen2.5-7b",
                 f"local:{packaged.model_dir() / QWEN_1_5B.filename}"):
        with pytest.raises(ConfigError, match="is a file .*chooses models by name"):
            client_model(name, settings)
    model = ScriptedChatModel(default="So the answer is: x")
    graph = build_method("standard", model=model, settings=settings)
    with pytest.raises(MissingExtra) as err:  # accepted as a name, then built: the extra is missing
        graph.invoke({"question": "Who?"}, context={"models": {"answerer": "local:qwen2.5-1.5b"}})
    assert re.fullmatch(EXTRA_LINE, str(err.value))
    with pytest.raises(ConfigError, match="chooses models by name"):
        graph.invoke({"question": "Who?"}, context={"models": {"answerer": "local:./qwen2.5-1.5b"}})
    assert not model.calls
