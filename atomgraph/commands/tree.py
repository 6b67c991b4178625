"""`atomgraph tree stats FILE... [--json]` and `atomgraph tree show FILE --index N`.

Reads planner-output files like the ATOMR authors' released trees: JSON Lines with a
``reasoning_tree`` field per record (a plain JSON list of such records, or of bare trees,
works too), parses every tree with :func:`atomgraph.prompts.atomr.parse_tree` and reports
depth (root = 1, operators not counted) and operator statistics.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atomgraph.errors import AtomgraphError, ParseError
from atomgraph.jsonl import iter_json_objects, read_json, read_text
from atomgraph.state.atomr import ReasoningTree

OPERATORS = ("Search", "Relate", "Filter")


@dataclass
class PlannerRecord:
    index: Any  # the record's "index", else its position in the file
    question: str | None
    raw: Any  # the planner output (dict or text)
    where: str  # "FILE:line N" or "FILE item N"


def _record(obj: Any, pos: int, where: str) -> PlannerRecord:
    if isinstance(obj, dict) and "reasoning_tree" in obj:
        q = obj.get("question")
        return PlannerRecord(obj.get("index", pos), q if isinstance(q, str) else None, obj["reasoning_tree"], where)
    if isinstance(obj, (dict, str)):
        return PlannerRecord(pos, None, obj, where)
    raise ParseError(f"{where}: expected a record with a 'reasoning_tree' field, found {type(obj).__name__}")


def load_planner_file(path: str | Path, encoding: str = "utf-8") -> list[PlannerRecord]:
    """Records of a planner-output file (JSONL with ``reasoning_tree``, or a JSON list), read
    strictly (:mod:`atomgraph.jsonl`: encoding, JSON and shape errors name the file and line)."""
    from atomgraph.prompts.atomr.tree_parser import loads  # the prompts package: only `tree` needs it

    p = Path(path)
    text = read_text(p, encoding=encoding, what="planner-output file")
    if text.lstrip().startswith("["):
        items = read_json(p, encoding=encoding, what="planner-output file", loads=loads)
        if not isinstance(items, list):
            raise ParseError(f"{p}: expected a JSON list of planner records")
        records = [_record(obj, i, f"{p} item {i}") for i, obj in enumerate(items)]
    else:
        records = []
        for n, obj in iter_json_objects(text.splitlines(), str(p), loads=loads):
            if "reasoning_tree" not in obj:
                raise ParseError(f"{p}:{n}: expected a JSON object with a 'reasoning_tree' field")
            records.append(_record(obj, len(records), f"{p}:{n}"))
    if not records:
        raise ParseError(f"{p}: no planner records (the file is empty)")
    return records


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def tree_stats(records: list[PlannerRecord]) -> dict[str, Any]:
    """Counts, failures, depth summary and operator/kind counts over ``records``."""
    from atomgraph.prompts.atomr import TreeParseError, parse_tree

    depths: list[int] = []
    failed: list[dict[str, Any]] = []
    ops: Counter = Counter()
    kinds: Counter = Counter()
    repaired = 0
    for r in records:
        try:
            tree = parse_tree(r.raw, r.question)
        except TreeParseError as exc:
            failed.append({"index": r.index, "reason": exc.reason, "where": r.where})
            continue
        depths.append(tree.depth)
        ops.update(tree.operator_counts())
        kinds.update(tree.kind_counts())
        repaired += bool(tree.repairs)
    depth = None
    if depths:
        depth = {
            "mean": statistics.fmean(depths),
            "median": _num(statistics.median(depths)),
            "min": min(depths),
            "max": max(depths),
            "histogram": {str(d): c for d, c in sorted(Counter(depths).items())},
        }
    return {
        "trees": len(records),
        "parsed": len(depths),
        "repaired": repaired,
        "failed": failed,
        "depth": depth,
        "operators": {name: ops.get(name, 0) for name in OPERATORS},
        "nodes": {k: kinds.get(k, 0) for k in ("parent", "operator", "direct", "open")},
    }


def _fmt(x: Any, decimals: int = 2) -> str:
    if x is None:
        return "-"
    return str(x) if isinstance(x, int) else f"{x:.{decimals}f}"


def format_stats_table(results: dict[str, dict[str, Any]]) -> str:
    cols = ["file", "trees", "parsed", "failed", "repaired", "mean", "median", "min", "max",
            *OPERATORS, "direct", "open"]
    rows = []
    for name, s in results.items():
        d = s["depth"] or {}
        rows.append([name, s["trees"], s["parsed"], len(s["failed"]), s["repaired"],
                     _fmt(d.get("mean")), _fmt(d.get("median")), _fmt(d.get("min")), _fmt(d.get("max")),
                     *(s["operators"][o] for o in OPERATORS), s["nodes"]["direct"], s["nodes"]["open"]])
    cells = [cols, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("depth: question levels, root = 1 (operator leaves not counted); mean/median/min/max over parsed trees")
    for name, s in results.items():
        for f in s["failed"]:
            lines.append(f"failed  {name}  index {f['index']}: {f['reason']}")
    return "\n".join(lines)


def render_tree(tree: ReasoningTree) -> str:
    """An indented view of ``tree``: one line per question node, operator and refs inline."""
    out = [f"depth {tree.depth}, {len(tree)} question nodes"]

    def line(i: int, prefix: str, last: bool, top: bool) -> None:
        n = tree[i]
        head = "" if top else prefix + ("└─ " if last else "├─ ")
        text = n.question if top else f"{n.id}. {n.question}"
        if n.kind == "operator" and n.operator:
            text += f"  → {n.operator.render()}"
        elif n.kind == "direct":
            text += "  → [DR]"
        elif n.kind == "open":
            text += "  → (open)"
        if n.note:
            text += f"  «{n.note}»"
        if n.refs:
            text += "  refs " + ", ".join(f"[{r}]" for r in n.refs)
        out.append(head + text)
        child_prefix = "" if top else prefix + ("   " if last else "│  ")
        for k, c in enumerate(n.children):
            line(c, child_prefix, k == len(n.children) - 1, False)

    line(tree.root, "", True, True)
    if tree.repairs:
        out.append("repairs:")
        out.extend(f"  - {r}" for r in tree.repairs)
    return "\n".join(out)


def _stats(args) -> int:
    results = {f: tree_stats(load_planner_file(f, args.encoding)) for f in args.files}
    if args.json:
        print(json.dumps({"files": [{"file": f, **s} for f, s in results.items()]}, indent=2, ensure_ascii=False))
    else:
        print(format_stats_table(results))
    return 0


def _show(args) -> int:
    from atomgraph.prompts.atomr import TreeParseError, parse_tree

    records = load_planner_file(args.file, args.encoding)
    match = [r for r in records if str(r.index) == str(args.index)]
    if not match:
        raise AtomgraphError(f"{args.file}: no record with index {args.index}")
    r = match[0]
    try:
        tree = parse_tree(r.raw, r.question)
    except TreeParseError as exc:
        raise ParseError(f"{r.where} (index {r.index}): cannot parse the tree: {exc.reason}") from None
    print(tree.model_dump_json(indent=2) if args.json else render_tree(tree))
    return 0


def register(sub) -> None:
    p = sub.add_parser("tree", help="parse ATOMR planner trees: depth/operator statistics, pretty-printing")
    tsub = p.add_subparsers(dest="tree_command", metavar="ACTION")
    s = tsub.add_parser("stats", help="per-file counts, parse failures, depth and operator statistics")
    s.add_argument("files", nargs="+", metavar="FILE", help="JSONL with a 'reasoning_tree' field per line, or a JSON list")
    s.add_argument("--json", action="store_true", help="print a machine-readable JSON object")
    s.add_argument("--encoding", default="utf-8", help="text encoding of the files (default utf-8)")
    s.set_defaults(func=_stats)
    sh = tsub.add_parser("show", help="pretty-print one parsed tree")
    sh.add_argument("file", metavar="FILE")
    sh.add_argument("--index", required=True, help="the record's 'index' value (or position)")
    sh.add_argument("--json", action="store_true", help="print the parsed tree as JSON")
    sh.add_argument("--encoding", default="utf-8", help="text encoding of the file (default utf-8)")
    sh.set_defaults(func=_show)

    def _usage(args) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_usage)
