"""Progress of long work on stderr: a bar with an ETA on a terminal, plain lines everywhere else (issue 24).

Why one module: `specgate probe` (one arm or `probe ab`) runs for minutes, and so do the benchmarks
(`bench/fleet.py`); a person at a terminal expects to see how far it is and how long is left, while a log, a
CI job or a pipe must get the same plain lines as before (tests and people grep them). Deciding which, and
drawing the bar, happens here only; the work itself reports through one `Reporter`:

    with reporter("[probe]", unit="requests", steps="cells", plain=args.no_progress) as say:
        say.expect(units=200, steps=20)    # more work known (probe ab: once per arm; totals add up)
        say("warm-up: 3 request(s) ...")   # a line: above the bar on a terminal, as is elsewhere
        say.advance()                      # one unit done (thread-safe: the probe's worker threads call it)
        say.step_done()                    # one step done (a cell)

Which output (`wants_bar`): the bar only when stderr is a terminal (`isatty()`), `TERM` is not `dumb`, the
command was not given `--no-progress` and `SPECGATE_PROGRESS` is not `0`; otherwise plain lines, each one
`f"{label} {msg}"` on stderr, exactly the lines the work printed before this module (`[probe] [3/20] ...`).
Nothing is ever written to stdout, so a command's `--format json` output stays one JSON document.

The bar is tqdm's (a small, well-kept library with no dependencies; it redraws one line with `\\r`, prints
lines above it with `tqdm.write`, and leaves its last frame when closed):

    [probe] cells 3/20  15%|██▌              | requests 30/200 [00:12 elapsed, ETA 01:08]

ETA = (total − done) / rate, with tqdm's rate: an exponential moving average of units per second (smoothing
0.3) — the requests, not the cells, because requests are the finer unit and arrive all through a cell; the
warm-up's requests count (they take time), the client-ceiling measurement's do not (under a second, against
a null engine). The totals are what the work says it will do (`expect`), so the ETA is a prediction from the
rate so far, labelled as such by its name. A request of a real engine can take seconds or minutes, so the
bar is also redrawn every `refresh` seconds (1 s) by a timer thread of its own: the elapsed time and the ETA
move while nothing finishes.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol, TextIO

from tqdm import tqdm

PLAIN_VALUES = frozenset({"0", "off", "no", "false", "plain"})  # SPECGATE_PROGRESS values that force plain lines


def wants_bar(stream: TextIO, plain: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """A bar only on a terminal that can redraw a line, and only when nobody asked for plain lines
    (`--no-progress`, `SPECGATE_PROGRESS=0`)."""
    env = os.environ if environ is None else environ
    if plain or env.get("SPECGATE_PROGRESS", "").strip().lower() in PLAIN_VALUES:
        return False
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: no terminal
        return False


class Reporter:
    """The lines and the bar of one piece of long work (module docstring). Callable as `say(msg)`, so it can
    stand wherever a plain `Callable[[str], None]` progress function is expected."""

    def __init__(self, label: str, *, unit: str = "requests", steps: str | None = None,
                 stream: TextIO | None = None, bar: bool | None = None, refresh: float = 1.0) -> None:
        self.label = label
        self.unit = unit
        self.steps = steps
        self.stream = sys.stderr if stream is None else stream
        self.bar = wants_bar(self.stream) if bar is None else bar
        self.total_steps = 0
        self.done_steps = 0
        self._bar: tqdm[Any] | None = None
        self._lock = threading.Lock()  # advance() comes from worker threads; lines and redraws must not interleave
        self.refresh = refresh
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    def __call__(self, msg: str) -> None:
        """One line: above the bar on a terminal, `label msg` on stderr otherwise."""
        line = f"{self.label} {msg}"
        with self._lock:
            if self._bar is not None:
                self._bar.write(line, file=self.stream)
            else:
                print(line, file=self.stream, flush=True)

    def _desc(self) -> str:
        return f"{self.label} {self.steps} {self.done_steps}/{self.total_steps} " if self.steps else f"{self.label} "

    def expect(self, units: int, steps: int = 0) -> None:
        """More work is known: `units` more to do (the bar's total), `steps` more steps. The bar appears at the
        first call (before it the totals are unknown, and only lines are shown)."""
        with self._lock:
            self.total_steps += steps
            if not self.bar:
                return
            if self._bar is None:
                self._bar = tqdm(total=units, file=self.stream, desc=self._desc(), unit=self.unit,
                                 dynamic_ncols=True, mininterval=0.2, leave=True,
                                 bar_format="{desc}{percentage:3.0f}%|{bar}| " + self.unit
                                 + " {n_fmt}/{total_fmt} [{elapsed} elapsed, ETA {remaining}]")
                self._timer = threading.Thread(target=self._redraw, name="progress-bar", daemon=True)
                self._timer.start()
            else:
                self._bar.total = (self._bar.total or 0) + units
                self._bar.set_description_str(self._desc(), refresh=False)
                self._bar.refresh()

    def advance(self, units: int = 1) -> None:
        """`units` done (thread-safe)."""
        with self._lock:
            if self._bar is not None:
                self._bar.update(units)

    def step_done(self, steps: int = 1) -> None:
        """`steps` steps done: the bar's `cells i/n` moves on (the plain lines already say `[i/n]`)."""
        with self._lock:
            self.done_steps += steps
            if self._bar is not None:
                self._bar.set_description_str(self._desc(), refresh=True)

    def _redraw(self) -> None:
        """The timer: redraw every `refresh` seconds until close()."""
        while not self._stop.wait(self.refresh):
            with self._lock:
                if self._bar is not None:
                    self._bar.refresh()

    def close(self) -> None:
        """Draw the last frame and end its line (idempotent): whatever is printed next starts on a line of its
        own — an error's one line, `wrote FILE`."""
        self._stop.set()
        if self._timer is not None:
            self._timer.join()
            self._timer = None
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
                self.bar = False  # later lines are plain


@contextmanager
def reporter(label: str, *, unit: str = "requests", steps: str | None = None, plain: bool = False,
             stream: TextIO | None = None) -> Iterator[Reporter]:
    """A Reporter that is closed however the work ends (an error, Ctrl-C), so the terminal's last line is the
    bar's final frame and the next output starts on a fresh line."""
    out = sys.stderr if stream is None else stream
    rep = Reporter(label, unit=unit, steps=steps, stream=out, bar=wants_bar(out, plain))
    try:
        yield rep
    finally:
        rep.close()


class Meter(Protocol):
    """What long work reports besides its lines (a Reporter is one; `NoMeter` counts nothing)."""

    def expect(self, units: int, steps: int = 0) -> None: ...

    def advance(self, units: int = 1) -> None: ...

    def step_done(self, steps: int = 1) -> None: ...


class NoMeter:
    """The Meter of work run without a bar (library calls, tests): every count is dropped."""

    def expect(self, units: int, steps: int = 0) -> None:
        pass

    def advance(self, units: int = 1) -> None:
        pass

    def step_done(self, steps: int = 1) -> None:
        pass
