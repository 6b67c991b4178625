"""The suite's scheduling (tests/conftest.py ``LONGEST_FIRST``): the files it names exist, and
``make test`` keeps xdist from reordering them by their number of tests."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONGEST_FIRST, REPO


def test_the_longest_files_named_exist():
    missing = [name for name in LONGEST_FIRST if not (Path(__file__).parent / name).is_file()]
    assert not missing, f"LONGEST_FIRST names files that are gone: {missing}"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_make_test_hands_files_out_in_that_order():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    line = next(ln for ln in makefile.splitlines() if "-m pytest" in ln)
    assert "--dist loadfile" in line and "--no-loadscope-reorder" in line, line


def test_collection_puts_them_first(request):
    files = list(dict.fromkeys(item.path.name for item in request.session.items))
    present = [name for name in LONGEST_FIRST if name in files]
    assert files[: len(present)] == present
