"""Where the loop goes after each node: on while no exit is set, else to ``answer``."""

from __future__ import annotations

from typing import Literal


def after_propose(state: dict) -> Literal["retrieve", "answer"]:
    return "answer" if state.get("exit") else "retrieve"


def after_retrieve(state: dict) -> Literal["select", "answer"]:
    return "answer" if state.get("exit") else "select"


def after_select(state: dict) -> Literal["propose", "answer"]:
    return "answer" if state.get("exit") else "propose"
