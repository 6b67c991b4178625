"""An HTML report of run directories: one self-contained file (no server, no script, no link out).

``atomgraph eval report RUN ... --html report.html`` writes it: the runs' table (ours, the
paper's value where a recipe gives one, the difference, the degraded mark), the comparison of
each run with the first (:mod:`atomgraph.evaluation.compare`), and every question with each
run's answer, F1 and trace — ATOMR's executed tree, KAR³'s rounds, ARM's drafts — as nested
``<details>`` a reader expands. Every text from a record (questions, answers, evidence, model
replies) is escaped: it is data, and the page carries no script to run.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any, Sequence

MAX_TEXT = 2000  # characters of one value shown inline; the rest is said, not dropped silently
MAX_ITEMS = 200  # list items shown per level

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.degraded{color:#a00;font-weight:bold}.gained{color:#070}.lost{color:#a00}
details{margin-left:1em}summary{cursor:pointer}code,pre{font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap}
.q{border-top:1px solid #ddd;padding:.5em 0}
"""


def _e(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"… ({len(text)} characters in all)"
    return html.escape(text)


def _tree(value: Any, label: str = "trace", depth: int = 0) -> str:
    """A JSON value as nested ``<details>`` (dicts and lists expand; scalars inline)."""
    if isinstance(value, dict) and value and depth < 12:
        inner = "".join(_tree(v, str(k), depth + 1) for k, v in value.items())
        return f"<details><summary>{_e(label)} <small>({len(value)} keys)</small></summary>{inner}</details>"
    if isinstance(value, list) and value and depth < 12:
        items = "".join(_tree(v, f"[{i}]", depth + 1) for i, v in enumerate(value[:MAX_ITEMS]))
        more = f"<div>… {len(value) - MAX_ITEMS} more items</div>" if len(value) > MAX_ITEMS else ""
        return f"<details><summary>{_e(label)} <small>({len(value)} items)</small></summary>{items}{more}</details>"
    return f"<div><code>{_e(label)}</code>: {_e(value)}</div>"


def _runs_table(rows: Sequence[dict]) -> str:
    head = ["run", "method", "dataset", "n", "EM", "F1", "paper", "ours − paper", "errors", "LLM calls/q", "$/q"]
    out = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for r in rows:
        p = r.get("paper")
        degraded = r.get("degraded")
        paper = f"{p['paper']:g} ({_e(p['metric'])})" if p else "–"
        diff = "–" if not p else ("not comparable" if degraded or p["ours"] is None else f"{p['ours'] - p['paper']:+.2f}")
        mark = ' <span class="degraded">DEGRADED</span>' if degraded else ""
        cells = [_e(r["run"]) + mark, _e(r["method"]), _e(r["dataset"]), str(r["n"]), f"{r['em']:.2f}", f"{r['f1']:.2f}",
                 paper, diff, str(r["errors"]), f"{r['llm_calls']:.2f}", f"{r['cost_per_question']:.5f}"]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    for r in rows:
        if r.get("degraded"):
            out.append(f'<p class="degraded">{_e(r["run"])} is degraded, not its setting: {_e("; ".join(r["degraded"]))}</p>')
    return "\n".join(out)


def _comparison(c: dict) -> str:
    m = c["metric"].upper()
    head = (f"<p>B = <b>{_e(c['b']['run'])}</b> against A = <b>{_e(c['a']['run'])}</b> on {c['n']} questions: "
            f"B − A {m} <b>{c['difference']:+.2f}</b> (95% paired bootstrap {c['interval'][0]:+.2f} to "
            f"{c['interval'][1]:+.2f}); {c['wins']} better, {c['losses']} worse, {c['ties']} the same; "
            f"flipped: <span class=gained>{c['gained']} gained</span>, <span class=lost>{c['lost']} lost</span>.</p>")
    rows = ["<table><tr><th>id</th><th>question</th><th>A answer</th><th>A " + m + "</th><th>B answer</th><th>B "
            + m + "</th><th>flip</th></tr>"]
    for r in c["rows"]:
        if r["a"]["predicted"] == r["b"]["predicted"] and not r["flip"]:
            continue
        rows.append(f"<tr><td>{_e(r['id'])}</td><td>{_e(r['question'])}</td><td>{_e(r['a']['predicted'])}</td>"
                    f"<td>{r['a'][c['metric']]:.1f}</td><td>{_e(r['b']['predicted'])}</td><td>{r['b'][c['metric']]:.1f}</td>"
                    f"<td class=\"{r['flip']}\">{r['flip']}</td></tr>")
    rows.append("</table>")
    return head + "\n".join(rows)


def _questions(runs: Sequence[tuple[str, dict, list[dict]]]) -> str:
    first = runs[0][2]
    by_run = [{str(r["id"]): r for r in recs} for _, _, recs in runs]
    parts = []
    for rec in first:
        qid = str(rec["id"])
        gold = rec.get("gold") or rec.get("answers") or []
        blocks = []
        for (name, _, _), index in zip(runs, by_run):
            r = index.get(qid)
            if r is None:
                continue
            f1 = 100 * float((r.get("metrics") or {}).get("f1", 0.0) or 0.0)
            err = f" — error: {_e(r['error'])}" if r.get("error") else ""
            blocks.append(f"<details><summary><b>{_e(name)}</b>: {_e(r.get('predicted', '')) or '<i>(no answer)</i>'}"
                          f" — F1 {f1:.1f}{err}</summary>{_tree(r.get('trace') or {}, 'trace')}</details>")
        parts.append(f'<div class="q" id="q-{_e(qid)}"><b>{_e(qid)}</b>: {_e(rec.get("question", ""))} '
                     f"<small>gold: {_e(', '.join(map(str, gold)))}</small>{''.join(blocks)}</div>")
    return "\n".join(parts)


def html_report(dirs: Sequence[str | os.PathLike], prices: dict | None = None) -> str:
    """The report of ``dirs`` (run directories) as one HTML document (see the module docstring)."""
    from atomgraph.evaluation.compare import compare_runs
    from atomgraph.evaluation.report import load_run, summarize_run

    runs = [(str(d), *load_run(d)) for d in dirs]
    rows = [{"run": name, **summarize_run(meta, recs, prices or {})} for name, meta, recs in runs]
    comparisons = [compare_runs(dirs[0], d) for d in dirs[1:]]
    body = [f"<h1>atomgraph runs</h1><h2>Runs</h2>{_runs_table(rows)}"]
    if comparisons:
        body.append("<h2>Comparison</h2>" + "".join(_comparison(c) for c in comparisons))
    body.append(f"<h2>Questions</h2>{_questions(runs)}")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>atomgraph runs</title><style>{_STYLE}</style></head><body>{''.join(body)}</body></html>\n")
