"""Clean bytes: nothing the command line prints can steer a terminal or crash on a
surrogate (atomgraph/text.py), and the answer contract refuses such answers in every method
(the hostile matrix's escape/bidi/nul/surrogate modes: tests/test_hostile_matrix.py)."""

from __future__ import annotations

import io
import json

import pytest

from atomgraph import text as safe_text

HOSTILE = ["Ulm\x1b]0;PWNED\x07\x1b[2J\x1b[1;1H", "\u202eUlm", "Ulm\x00\x08", "Ulm\ud800", "\x9b2J", "a\u2066b\u2069"]
RAW = ["\x1b", "\x07", "\u202e", "\x00", "\x08", "\ud800", "\x9b", "\u2066", "\u2069"]


@pytest.mark.parametrize("text", HOSTILE)
def test_escape_leaves_no_unsafe_character_and_round_trips_in_json(text):
    shown = safe_text.escape(text)
    assert not any(ch in shown for ch in RAW)
    assert safe_text.unsafe_chars(text) and not safe_text.unsafe_chars(shown)
    # inside a JSON string the escape is the same character: printed JSON stays valid and exact
    assert json.loads('"' + safe_text.escape(json.dumps(text, ensure_ascii=False)[1:-1]) + '"') == text


def test_plain_text_is_unchanged():
    text = "Munich, Bavaria\tGermany\nÉcole — 東京 “quoted” 👍"
    assert safe_text.escape(text) == text and safe_text.unsafe_chars(text) == []


def test_safe_stream_writes_escapes_and_never_crashes_on_a_surrogate():
    raw = io.BytesIO()
    inner = io.TextIOWrapper(raw, encoding="utf-8")  # strict: a lone surrogate would raise here
    stream = safe_text.SafeStream(inner)
    for text in HOSTILE:
        print(text, file=stream)
    stream.flush()
    out = raw.getvalue().decode("utf-8")
    assert not any(ch in out for ch in RAW) and "\\u001b]0;PWNED\\u0007" in out and "\\ud800" in out


@pytest.mark.parametrize("as_json", [False, True])
def test_the_command_line_escapes_what_a_command_prints(monkeypatch, capsys, as_json):
    """Whatever a command prints (an answer, a trace, an error, JSON) reaches the terminal escaped."""
    from atomgraph import cli
    from atomgraph.commands import ask, common

    def fake_run(args):
        result = {"question": args.question, "answer": HOSTILE[0], "error": HOSTILE[3], "trace": {"x": HOSTILE[1]}}
        if as_json:
            common.print_json(result)
        else:
            print(f"Answer: {result['answer']}")
            print(f"Error: {result['error']}")
            import sys
            print(HOSTILE[2], HOSTILE[1], file=sys.stderr)
        return 1

    monkeypatch.setattr(ask, "run", fake_run)
    assert cli.main(["ask", "Where?"]) == 1
    out, err = capsys.readouterr()
    for text in (out, err):
        assert not any(ch in text for ch in RAW), repr(text)
    if as_json:
        assert json.loads(out)["answer"] == HOSTILE[0]  # the same text, escaped as JSON escapes
    else:
        assert "Answer: Ulm\\u001b]0;PWNED\\u0007" in out and "\\u202eUlm" in err
