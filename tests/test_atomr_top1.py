"""The authors' top-1 shortcut for Search and Relate: a text source's top hit
whose share of the k hits (softmax of score / top1_temperature) exceeds the operator's threshold
is taken alone; web and KG sources are never cut; the switch turns it off."""

from __future__ import annotations

from atomgraph.nodes.atomr.node_reasoning import top1_share, top1_shortcut
from atomgraph.state.atomr import AtomRContext
from atomgraph.state.run import Evidence


def ev(source, *scores):
    return [Evidence(title=f"{source}{i}", text="t", source=source, score=s) for i, s in enumerate(scores)]


def test_share_is_the_authors_softmax():
    # ColBERTv2-sized scores with temperature 1: a gap of ~1.1 gives 0.75 (the authors' Search threshold)
    assert round(top1_share([21.1, 20.0, 19.5], 1.0), 2) == 0.65
    assert top1_share([25.0, 20.0, 19.0], 1.0) > 0.99
    # raw cosines never pass (k = 3): hence the calibrated temperature
    assert top1_share([0.9, 0.1, 0.0], 1.0) < 0.6


def test_shortcut_keeps_the_top_hit_alone_on_text_sources_only():
    params = AtomRContext(top1_temperature=0.02)
    hits = ev("wikipedia", 0.80, 0.60, 0.55) + ev("google", 0.9, 0.1)
    kept, notes = top1_shortcut(hits, "Relate", params, {"wikipedia": "text", "google": "web"})
    assert [e.title for e in kept] == ["wikipedia0", "google0", "google1"]
    assert notes and "top-1 shortcut on wikipedia" in notes[0]
    close = ev("wikipedia", 0.80, 0.79, 0.78)  # no clear winner: all k kept
    assert len(top1_shortcut(close, "Search", params, {"wikipedia": "text"})[0]) == 3
    assert len(top1_shortcut(hits, "Filter", params, {"wikipedia": "text"})[0]) == len(hits)  # Filter has its own gate
    off = AtomRContext(top1_shortcut=False)
    assert top1_shortcut(hits, "Relate", off, {"wikipedia": "text"}) == (hits, [])


def test_relate_needs_more_than_search():
    params = AtomRContext(top1_temperature=0.02)
    hits = ev("wikipedia", 0.80, 0.77, 0.70)  # share ≈ 0.78: over Search's 0.75, under Relate's 0.85
    assert len(top1_shortcut(hits, "Search", params, {"wikipedia": "text"})[0]) == 1
    assert len(top1_shortcut(hits, "Relate", params, {"wikipedia": "text"})[0]) == 3
