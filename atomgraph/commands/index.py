"""`atomgraph index` (being built)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("index", help="(not yet available)")
    p.set_defaults(func=lambda args: print("atomgraph index: not yet available") or 2)
