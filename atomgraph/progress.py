"""Progress of long work (indexing, retrieval runs, evaluation runs), where a user sees it.

On a terminal, a ``tqdm`` bar (count, rate, ETA); anywhere else (a log file, CI, a pipe) a
plain line every ``every_s`` seconds (default 30; ``ATOMGRAPH_PROGRESS_EVERY`` sets it) and one
at the end, each with the count, the rate and the ETA, so a long job in a log is never silent:

    index wikipedia: 12,288/100,000 passages (12%), 41.7 passages/s, ETA 35m05s

A line goes to the ``stream`` a caller gives, else to the ``atomgraph.progress`` logger at
INFO (:func:`say`): an application decides whether it shows them, and the command line
shows them on stderr (:func:`atomgraph.cli.main`).

>>> with progress(total=len(items), desc="index wikipedia", unit="passages") as bar:
...     for item in items:
...         work(item)
...         bar.update(1)
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from typing import Any, Callable, TextIO

DEFAULT_EVERY_S = 30.0

log = logging.getLogger(__name__)


def say(line: str, stream: TextIO | None = None) -> None:
    """One progress line: to ``stream`` when given, else an INFO record of ``atomgraph.progress``."""
    if stream is None:
        log.info("%s", line)
    else:
        print(line, file=stream, flush=True)


def duration(seconds: float) -> str:
    """``3h02m``, ``35m05s`` or ``42s``."""
    s = max(0, int(round(seconds)))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def _every_s() -> float:
    try:
        from atomgraph.environment import env_value

        value = float(env_value("ATOMGRAPH_PROGRESS_EVERY") or DEFAULT_EVERY_S)
    except ValueError:
        return DEFAULT_EVERY_S
    return value if value > 0 else DEFAULT_EVERY_S


class LineProgress:
    """The log-file form: a line every ``every_s`` seconds and one at :meth:`close` (the same
    ``update`` / ``set_postfix_str`` / ``close`` calls as a tqdm bar)."""

    def __init__(self, total: int | None, desc: str, unit: str, *, initial: int = 0, stream: TextIO | None = None,
                 every_s: float | None = None):
        self.total, self.desc, self.unit = total, desc, unit
        self.n = self.initial = initial
        self.stream = stream
        self.every_s = every_s if every_s is not None else _every_s()
        self.t0 = self._last = time.monotonic()
        self.postfix = ""
        self.lines = 0
        self._closed = False

    def line(self) -> str:
        elapsed = time.monotonic() - self.t0
        done = self.n - self.initial
        rate = done / elapsed if elapsed > 0 else 0.0
        parts = [f"{self.n:,}/{self.total:,} {self.unit}" if self.total else f"{self.n:,} {self.unit}"]
        if self.total:
            parts[0] += f" ({100 * self.n / self.total:.0f}%)"
        parts.append(f"{rate:.3g} {self.unit}/s")
        if self.total and rate > 0 and self.n < self.total:
            parts.append(f"ETA {duration((self.total - self.n) / rate)}")
        parts.append(f"elapsed {duration(elapsed)}")
        return f"{self.desc}: " + ", ".join(parts) + (f" | {self.postfix}" if self.postfix else "")

    def _say(self) -> None:
        say(self.line(), self.stream)
        self.lines += 1
        self._last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        if time.monotonic() - self._last >= self.every_s:
            self._say()

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.n > self.initial or self.lines:
                self._say()

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Off(LineProgress):
    def _say(self) -> None:
        pass


def progress(total: int | None, desc: str, unit: str = "it", *, enabled: bool = True, initial: int = 0,
             stream: TextIO | None = None, every_s: float | None = None):
    """A progress reporter: a tqdm bar when ``stream`` (default stderr) is a terminal, else
    :class:`LineProgress` (to ``stream``, or the ``atomgraph.progress`` logger when none is
    given); nothing shown when ``enabled`` is false."""
    out = stream or sys.stderr
    if not enabled:
        return _Off(total, desc, unit, initial=initial, stream=out)
    isatty = getattr(out, "isatty", None)
    if isatty is not None and isatty():
        from tqdm import tqdm

        return tqdm(total=total, initial=initial, desc=desc, unit=f" {unit}", file=out, dynamic_ncols=True)
    return LineProgress(total, desc, unit, initial=initial, stream=stream, every_s=every_s)


class WarmUp:
    """The steps of one warm-up: each timed (:attr:`seconds`) and, when ``show``, said."""

    def __init__(self, show: bool = True):
        self.show = show
        self.seconds: dict[str, float] = {}
        self.runtimes: list[dict[str, str]] = []  # what runs each local embedding model loaded (wanted, used, why)

    def step(self, what: str, load: Callable[[], Any], note: Callable[[], str] | None = None) -> Any:
        """``load()``, timed; ``note()``, where given, ends the "loaded" line (what was loaded, in its words)."""
        if self.show:
            say(f"loading {what} ...")
        t0 = time.perf_counter()
        value = load()
        took = self.seconds[what] = round(time.perf_counter() - t0, 3)
        if self.show:
            said = note() if note is not None else ""
            say(f"loaded {what} in {took:.1f} s" + (f"; {said}" if said else ""))
        return value


# --- the start of a command-line process ----------------------------------------------------------

_paused = False  # the command line paused the collector for this process's start


def pause_collector() -> None:
    """Pause the garbage collector for the start of a process of the command line (:func:`started` ends it)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def started() -> None:
    """The start of a run is over: where :func:`pause_collector` paused the collector, the objects made so
    far are frozen (``gc.freeze``) and it runs again; elsewhere (a library caller) nothing. Called again: nothing."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
