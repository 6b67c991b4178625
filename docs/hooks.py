"""MkDocs hook: the settings reference is generated from the settings models at build time.

A page holding the marker ``<!-- settings-reference -->`` gets, in its place, one table of the
global settings and one table per method section, each row read from the pydantic JSON schema
of :class:`atomgraph.settings.Settings` (name, environment variable, default, bounds,
description) — so the reference cannot drift from the code.
"""

from __future__ import annotations

import json
from typing import Any

MARKER = "<!-- settings-reference -->"


def _type(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        return " or ".join(_type(p) for p in prop["anyOf"])
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "enum" in prop:
        return " / ".join(json.dumps(v) for v in prop["enum"])
    if "const" in prop:
        return json.dumps(prop["const"])
    kind = prop.get("type", "any")
    if kind == "array" and "items" in prop:
        return f"list of {_type(prop['items'])}"
    return str(kind).replace("null", "none")


def _bounds(prop: dict[str, Any]) -> str:
    parts = []
    for p in [prop, *prop.get("anyOf", [])]:
        for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
            if key in p:
                parts.append(f"{sign} {p[key]}")
    return ", ".join(parts)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(props: dict[str, Any], env: str) -> list[str]:
    rows = ["| setting | environment | type | default | bounds | what it does |", "|---|---|---|---|---|---|"]
    for name, prop in props.items():
        default = prop.get("default")
        default = "" if default is None else f"`{_cell(json.dumps(default, ensure_ascii=False))}`"
        var = name if name.startswith("ATOMGRAPH_") else f"{env}{name.upper()}"
        rows.append(f"| `{name}` | `{var}` | {_cell(_type(prop))} | {default} | {_bounds(prop)} | "
                    f"{_cell(prop.get('description', ''))} |")
    return rows


def settings_reference() -> str:
    from atomgraph.methods import settings_sections
    from atomgraph.settings import Settings

    schema = Settings.model_json_schema()
    defs, props = schema.get("$defs", {}), schema["properties"]
    sections = settings_sections()
    from atomgraph.settings import ENV_ONLY

    out = ["## Global settings", "", *_table({k: v for k, v in props.items() if k not in sections}, "ATOMGRAPH_")]
    out += ["", "## Environment only", "", "Read where they are used, not settings fields (`atomgraph/settings.py`: `ENV_ONLY`).",
            "", "| variable | what |", "|---|---|", *[f"| `{k}` | {_cell(v)} |" for k, v in ENV_ONLY.items()]]
    for section, method in sections.items():
        ref = props[section].get("$ref", "").rsplit("/", 1)[-1]
        body = defs.get(ref, {})
        out += ["", f"## `[{section}]` — {method.name}", "", _cell(method.description), "",
                *_table(body.get("properties", {}), f"ATOMGRAPH_{section.upper()}__")]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, settings_reference())
    return markdown
