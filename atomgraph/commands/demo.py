"""`atomgraph demo` (being built)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("demo", help="(not yet available)")
    p.set_defaults(func=lambda args: print("atomgraph demo: not yet available") or 2)
