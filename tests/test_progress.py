"""Long work is never silent: a bar on a terminal, and in a log (not a terminal) a line with
count, rate and ETA every ``ATOMGRAPH_PROGRESS_EVERY`` seconds and one at the end."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from atomgraph.progress import LineProgress, duration, progress

REPO = Path(__file__).resolve().parents[1]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_line_progress_has_count_rate_and_eta():
    out = io.StringIO()
    with LineProgress(400, "index wikipedia demo", "records", stream=out, every_s=0.0) as bar:
        for _ in range(4):
            bar.update(100)
        bar.set_postfix_str("2 errors")
    lines = out.getvalue().splitlines()
    assert len(lines) == 5  # one per update, one at the end
    assert re.match(r"index wikipedia demo: 100/400 records \(25%\), [\d.e+]+ records/s, ETA \d+s, elapsed \d+s$",
                    lines[0]), lines[0]
    assert lines[-1].startswith("index wikipedia demo: 400/400 records (100%), ") and "ETA" not in lines[-1]
    assert lines[-1].endswith(" | 2 errors")


def test_lines_are_periodic_not_per_item():
    out = io.StringIO()
    bar = LineProgress(None, "retrieve arm", "questions", stream=out, every_s=3600)
    for _ in range(1000):
        bar.update(1)
    bar.close()
    assert out.getvalue().splitlines() == [out.getvalue().splitlines()[0]]  # only the closing line
    assert out.getvalue().startswith("retrieve arm: 1,000 questions, ")


def test_terminal_gets_a_bar_a_log_gets_lines_off_gets_nothing():
    from tqdm import tqdm

    bar = progress(10, "eval", "questions", stream=Tty())
    assert isinstance(bar, tqdm)
    bar.close()
    assert isinstance(progress(10, "eval", "questions", stream=io.StringIO()), LineProgress)
    quiet = io.StringIO()
    off = progress(10, "eval", "questions", stream=quiet, enabled=False, every_s=0.0)
    off.update(10)
    off.close()
    assert quiet.getvalue() == ""


def test_duration():
    assert (duration(42), duration(125), duration(3 * 3600 + 120)) == ("42s", "2m05s", "3h02m")


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ATOMGRAPH_PROGRESS_EVERY": "0.000001", "HF_HUB_OFFLINE": "1",
           "ATOMGRAPH_CACHE": "false"}
    return subprocess.run([sys.executable, "-m", "atomgraph.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def test_index_wikipedia_in_a_log_prints_progress_lines(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"title": f"T{i}", "text": f"Passage number {i} about topic {i % 7}."}) + "\n"
                              for i in range(40)), encoding="utf-8")
    p = _cli(["index", "wikipedia", str(corpus), "--collection", "prog", "--persist", str(tmp_path / "db"),
              "--batch-size", "10"], tmp_path)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("index wikipedia prog: ")]
    assert len(lines) >= 4, p.stderr
    assert any(re.search(r"\d+/40 records \(\d+%\), [\d.e+]+ records/s, ETA ", ln) for ln in lines), lines
    assert lines[-1].startswith("index wikipedia prog: 40/40 records (100%)")


def test_eval_run_in_a_log_prints_progress_lines(tmp_path):
    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps({"question_id": f"q{i}", "question": f"What is item {i}?",
                                        "answers": [f"item {i}"]}) + "\n" for i in range(6)))
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [], "default": "So the answer is: item 1"}))
    p = _cli(["eval", "run", "--method", "standard", "--dataset", str(data), "--model", f"scripted:{rules}",
              "--out", str(tmp_path / "run"), "--concurrency", "1"], tmp_path)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith(f"standard on {data}: ") and "questions/s" in ln]
    assert len(lines) >= 2 and "questions/s" in lines[0] and "ETA" in lines[0], p.stderr
    assert lines[-1].startswith(f"standard on {data}: 6/6 questions (100%)") and "F1 " in lines[-1]
