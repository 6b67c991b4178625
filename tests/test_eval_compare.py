"""One run beside another: `eval compare` and the self-contained HTML report, opened in a real browser."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from atomgraph.cli import main
from atomgraph.evaluation.compare import compare_runs, paired_bootstrap
from atomgraph.evaluation.datasets import Example
from atomgraph.evaluation.runner import EvalOptions, run_eval
from atomgraph.testing import ScriptedChatModel

QUESTIONS = [("q1", "Where did Sommerfeld die?", "Munich"), ("q2", "Where was Einstein born?", "Ulm"),
             ("q3", "Which city hosts the Minster?", "Ulm"), ("q4", "Capital of France?", "Paris")]


def _runs(tmp_path):
    examples = [Example(id=i, question=q, answers=[a]) for i, q, a in QUESTIONS]
    # A answers q1, q2 right; B answers q1, q3, q4 right (and its wrong answer carries markup)
    a = ScriptedChatModel(rules=[("Sommerfeld", "So the answer is: Munich"), ("Einstein", "So the answer is: Ulm")],
                          default="So the answer is: Berlin")
    b = ScriptedChatModel(rules=[("Sommerfeld", "So the answer is: Munich"), ("Minster", "So the answer is: Ulm"),
                                 ("France", "So the answer is: Paris")], default="So the answer is: Bonn <b>bold</b>")
    run_eval("cot", examples, tmp_path / "a", EvalOptions(model=a, progress=False, dataset_name="toy"))
    run_eval("cot", examples, tmp_path / "b", EvalOptions(model=b, progress=False, dataset_name="toy"))
    return tmp_path / "a", tmp_path / "b"


def test_compare_pairs_questions_and_bounds_the_difference(tmp_path, capsys):
    ra, rb = _runs(tmp_path)
    c = compare_runs(ra, rb)
    assert c["n"] == 4 and (c["gained"], c["lost"]) == (2, 1)
    flips = {r["id"]: r["flip"] for r in c["rows"]}
    assert flips == {"q1": "", "q2": "lost", "q3": "gained", "q4": "gained"}, flips
    assert c["difference"] == pytest.approx(sum(r["b"]["f1"] - r["a"]["f1"] for r in c["rows"]) / 4)
    low, high = c["interval"]
    assert low <= c["difference"] <= high
    assert paired_bootstrap([1.0] * 10) == (1.0, 1.0)  # no spread, no interval
    assert main(["eval", "compare", str(ra), str(rb)]) == 0
    out = capsys.readouterr().out
    assert "4 questions in both" in out and "flipped by EM: 2 gained, 1 lost" in out
    assert sorted(line.split()[0] for line in out.splitlines()[5:]) == ["q2", "q3", "q4"]  # only those that differ
    assert main(["eval", "compare", str(ra), str(rb), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gained"] == 2


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")),
                    reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_html_report_renders_in_a_headless_browser(tmp_path, capsys):
    ra, rb = _runs(tmp_path)
    page = tmp_path / "report.html"
    assert main(["eval", "report", str(ra), str(rb), "--no-plots", "--html", str(page)]) == 0
    text = page.read_text()
    assert "<script" not in text and "http://" not in text and "https://" not in text  # self-contained, inert
    assert "&lt;b&gt;bold&lt;/b&gt;" in text  # a reply's markup is shown as text, never rendered
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--user-data-dir=" + str(tmp_path / "profile"), "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert "<h2>Runs</h2>" in dom and "<h2>Comparison</h2>" in dom and "<h2>Questions</h2>" in dom
    assert dom.count("<tr>") >= 3 + 4  # the runs' table and the differing questions
    assert "2 gained" in dom and "1 lost" in dom
    assert dom.count("<details>") >= 8 and "trace" in dom  # every question's answers and trace, expandable
    assert "<b>bold</b>" not in dom
