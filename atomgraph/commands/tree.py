"""`atomgraph tree` (being built)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("tree", help="(not yet available)")
    p.set_defaults(func=lambda args: print("atomgraph tree: not yet available") or 2)
