"""`atomgraph ask` (being built)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("ask", help="(not yet available)")
    p.set_defaults(func=lambda args: print("atomgraph ask: not yet available") or 2)
