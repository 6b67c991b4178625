"""Every ATOMR pack's prompts fit the bundled model's context with room for the reply: the
planner prompt with the longest question of the pack's dataset, and every other stage."""

from __future__ import annotations

import pytest

from benchmarks.bench_atomr_pack_fit import PACK_DATASETS, token_fit


@pytest.fixture(scope="module")
def engine():
    from atomgraph.local.engine import load_engine

    return load_engine()


def test_every_pack_leaves_room_for_the_reply(engine, shared_data):
    rooms = token_fit(engine, list(PACK_DATASETS))
    assert set(rooms) == {"hotpotqa", "2wiki", "musique", "crag", "blendqa"}
    for pack, row in rooms.items():
        assert row["plan"]["room"] >= 150, (pack, row["plan"])  # a BlendQA bridge plan is ~100-200 tokens
        assert all(v["room"] >= 1000 for k, v in row.items() if k != "plan"), (pack, row)
