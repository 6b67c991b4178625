"""The ``atomgraph`` command line: ``ask``, ``demo``, ``tree``, ``index``, ``eval``, ``retrieve``.

Each sub-command lives in ``atomgraph/commands/<name>.py`` and exposes
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``.
Everything printed is escaped (:mod:`atomgraph.text`). Library messages arrive through
``logging``: warnings always, ``-v`` adds INFO, and progress lines (the ``atomgraph.progress``
logger) show on stderr as they are written. User-facing errors
(:class:`~atomgraph.errors.AtomgraphError`) print one line, no traceback
(exit 2), as do file-system, SQLite and Chroma failures that reach the top (:func:`store_failure`;
``-v`` shows their traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys

from atomgraph import __version__
from atomgraph.errors import AtomgraphError

COMMANDS = ["ask", "demo", "tree", "index", "eval", "retrieve"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="atomgraph",
        description="Knowledge-intensive question answering as LangGraph workflows (ATOMR, KAR3, ARM).",
    )
    parser.add_argument("--config", help="TOML settings file (default: $ATOMGRAPH_CONFIG or ./atomgraph.toml)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    parser.add_argument("--version", action="version", version=f"atomgraph {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"atomgraph.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; everything it prints goes through :class:`~atomgraph.text.SafeStream`
    (control characters, terminal escapes, bidi overrides and lone surrogates written as
    ``\\uXXXX``: a model's reply cannot steer the terminal or crash printing)."""
    from atomgraph import text as safe_text
    from atomgraph.warmup import pause_collector, started

    if argv is None:  # a process of its own: its start runs with the collector paused (atomgraph.warmup)
        pause_collector()
    saved = sys.stdout, sys.stderr
    safe_text.install()
    try:
        with _progress_on_stderr():
            code = _main(argv)
        sys.stdout.flush()  # buffered output meets a reader that left here
        return code
    except BrokenPipeError:
        return _reader_left()
    finally:
        started()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:
            _reader_left()
        sys.stdout, sys.stderr = saved


class _StderrHandler(logging.StreamHandler):
    """Writes each record, as its bare message, to whatever ``sys.stderr`` is when it comes
    (the command's safe stream, a test's capture)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self):  # noqa: D102
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


@contextlib.contextmanager
def _progress_on_stderr():
    """While a command runs, the ``atomgraph.progress`` logger's lines show on stderr as written."""
    logger = logging.getLogger("atomgraph.progress")
    handler, saved = _StderrHandler(), (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _reader_left() -> int:
    """`atomgraph ... | head`: the pipe's reader is gone; not an error of ours. What is left to write goes
    to the null device (no second BrokenPipeError at exit); 141, as a shell reports SIGPIPE."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


def _main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:  # libraries that set their own logger to DEBUG (bm25s) stay quiet
        handler.setLevel(level)
    if args.config:
        import os

        os.environ["ATOMGRAPH_CONFIG"] = args.config
    from atomgraph.settings import unknown_environment_notes

    for note in unknown_environment_notes():  # a mistyped variable is said first, not ignored
        print(f"atomgraph: warning: {note}", file=sys.stderr)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if not getattr(args, "warms", False):  # a command that loads nothing at its start begins its work now
        from atomgraph.warmup import started

        started()
    try:
        return int(args.func(args) or 0)
    except AtomgraphError as exc:
        print(f"atomgraph: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("atomgraph: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left mid-command (caught before `Exception`, which would take it)
        return _reader_left()
    except Exception as exc:  # a file system or store failure no command turned into its own message
        line = store_failure(exc)
        if line is None or args.verbose:
            raise
        print(f"atomgraph: error: {line}", file=sys.stderr)
        return 2


def store_failure(exc: BaseException) -> str | None:
    """One line for a file-system, SQLite or Chroma failure (a read-only database, a folder that
    cannot be written, a path that is a file), or None for any other exception (a bug: its
    traceback is shown)."""
    import sqlite3

    if isinstance(exc, BrokenPipeError):
        return None
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return f"{where}{exc.strerror or exc}"
    module = type(exc).__module__ or ""
    if isinstance(exc, sqlite3.Error) or module.startswith("chromadb"):
        return f"the store failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
