"""`atomgraph eval` (being built)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("eval", help="(not yet available)")
    p.set_defaults(func=lambda args: print("atomgraph eval: not yet available") or 2)
