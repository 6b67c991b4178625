"""atomgraph.text: the one tokenizer, stopword set, n-grams and entity-list splitting."""

from __future__ import annotations

import pytest

from atomgraph.text import STOPWORDS, content_words, ngrams, split_entities, words


def test_words_are_lower_cased_tokens_without_possessives():
    assert words("Obama's children, Malia and Sasha, were born in 1998.") == [
        "obama", "children", "malia", "and", "sasha", "were", "born", "in", "1998"]
    assert words("O'Neill didn't go to Zürich") == ["o'neill", "didn't", "go", "to", "zürich"]
    assert words("STRASSE") == ["strasse"] and words("") == words(None) == []


def test_content_words_drop_the_stopwords():
    assert content_words("Who was born in 1955 among these?") == {"born", "1955"}
    assert {"the", "of", "who", "how", "many", "among", "than"} <= STOPWORDS
    assert content_words("the of a") == set()


def test_ngrams_longest_first_then_by_position():
    toks = ["Werner", "Heisenberg", "doctoral", "advisor"]
    assert ngrams(toks, 2) == [("Werner", "Heisenberg"), ("Heisenberg", "doctoral"), ("doctoral", "advisor"),
                               ("Werner",), ("Heisenberg",), ("doctoral",), ("advisor",)]
    assert ngrams(toks, 9)[0] == tuple(toks) and len(ngrams(toks, 9)) == 10
    assert ngrams(toks, 3, n_min=3) == [tuple(toks[:3]), tuple(toks[1:])]
    assert ngrams([], 3) == []


@pytest.mark.parametrize("text, names", [
    ('["Bill Gates", "Steve Jobs"]', ["Bill Gates", "Steve Jobs"]),
    ("['Malia Obama', 'Sasha Obama']", ["Malia Obama", "Sasha Obama"]),
    ("('A', 'B')", ["A", "B"]),
    ("Bill Gates, Steve Jobs and Lionel Messi", ["Bill Gates", "Steve Jobs", "Lionel Messi"]),
    ("Bill Gates, Steve Jobs, and Lionel Messi", ["Bill Gates", "Steve Jobs", "Lionel Messi"]),
    ("Messi; Jobs", ["Messi", "Jobs"]),
    ("Paris, Texas\nParis, France", ["Paris, Texas", "Paris, France"]),  # lines first: commas stay inside
    ("'Jaws'", ["Jaws"]),
    ("[unbalanced", ["unbalanced"]),
    ("   ", []),
])
def test_split_entities(text, names):
    assert split_entities(text) == names
