"""Evidence: one retrieved item from a knowledge source."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Evidence(BaseModel):
    """A passage, web result or KG fact, in a shape every source shares."""

    title: str = ""
    text: str
    source: str  # the knowledge source's registered name
    url: str | None = None  # web link, or None
    id: str | None = None  # passage id / entity id
    score: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def render(self) -> str:
        """'Title | text', the papers' passage format."""
        return f"{self.title} | {self.text}" if self.title else self.text


def render_evidence(items: list[Evidence], max_chars_per_item: int = 1200) -> str:
    """Numbered lines ``[1] Title | text`` for a prompt."""
    lines = []
    for i, ev in enumerate(items, 1):
        text = ev.render()
        if len(text) > max_chars_per_item:
            text = text[: max_chars_per_item - 3] + "..."
        lines.append(f"[{i}] {text}")
    return "\n".join(lines)
