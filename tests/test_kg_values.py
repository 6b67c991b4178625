"""Reading Filter conditions and judging KG facts against them (atomgraph.tools.kg_values)."""

from __future__ import annotations

import pytest

from atomgraph.tools.kg_values import Fact, condition_met, parse_condition, value_kind


@pytest.mark.parametrize(
    "text, attribute, op, value",
    [
        ("born in 1955", "born", "=", "1955"),
        ("was born before 1960", "born", "<", "1960"),
        ("born no later than 1960", "born", "<=", "1960"),
        ("date of birth in 1955", "date of birth", "=", "1955"),
        ("height over 1.8 metres", "height", ">", "1.8 metres"),
        ("has a population of at least 1000000", "population of", ">=", "1000000"),
        ("whose nationality is American", "nationality", "=", "American"),
        ("not born in 1955", "born", "!=", "1955"),
        ("is a citizen of Spain", "citizen", "=", "Spain"),
        ("born in the city of Paris", "born", "=", "city of Paris"),
        ("is a president", "president", None, None),
        ("  born in 1955. ", "born", "=", "1955"),
    ],
)
def test_parse_condition(text, attribute, op, value):
    c = parse_condition(text)
    assert (c.attribute, c.op, c.value) == (attribute, op, value)


def test_value_kinds():
    assert [value_kind(v) for v in ["1955", "October 1955", "1955-10-28", "1.8 metres", "2 million", "Spain"]] == [
        "time", "time", "time", "quantity", "quantity", "text"]


def _fact(datatype, value, label, tail_id=None):
    return Fact(head_id="Q1", head_label="X", relation_id="P1", relation_label="r", tail_label=label,
                tail_id=tail_id, datatype=datatype, value=value)


def test_condition_met_judges_only_values_of_the_facts_kind():
    born = _fact("time", "1955-10-28T00:00:00Z", "28 October 1955")
    place = _fact("item", "Q5083", "Seattle", "Q5083")
    assert condition_met(born, parse_condition("born in 1955")) is True
    assert condition_met(born, parse_condition("born after October 1955")) is False  # same month at that precision
    assert condition_met(place, parse_condition("born in 1955")) is None  # a year says nothing of a place
    assert condition_met(place, parse_condition("born in Seattle, Washington")) is True
    assert condition_met(place, parse_condition("not born in Seattle")) is False
    assert condition_met(born, parse_condition("is a president")) is None
    pop = _fact("quantity", "2145906", "2145906")
    assert condition_met(pop, parse_condition("population of more than 2 million")) is True
    assert condition_met(pop, parse_condition("population under 2 million")) is False
