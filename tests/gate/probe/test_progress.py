"""gate.probe.progress: which output (bar or plain lines), what the bar says, and `specgate probe` without a
terminal (pipes, as in CI and logs): plain `[probe]` lines on stderr exactly as before, nothing on stdout.

The terminal side — the bar drawn in a real pseudo-terminal — is tests/gate/probe/test_progress_tty.py (tmux).
Here a bar is drawn into a StringIO that says it is a terminal: the frames tqdm writes are the bytes a
terminal would get, so the text of the bar can be read off them.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gate.evidence.probes import load_record
from gate.probe.progress import NoMeter, Reporter, reporter, wants_bar
from tests.gate.probe.probe_replay import ReplayEngine

REPO = Path(__file__).resolve().parents[3]
NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":1}'
BAR = re.compile(r"\[probe\] cells (\d+)/(\d+) +(\d+)%\|[^|]*\| requests (\d+)/(\d+) "
                 r"\[(\d\d:\d\d) elapsed, ETA (\d\d:\d\d|\?)\]")


class Terminal(io.StringIO):
    """A stream that answers isatty() like a terminal's."""

    def isatty(self) -> bool:
        return True


class Closed(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


@pytest.mark.parametrize(("stream", "plain", "env", "bar"), [
    (Terminal(), False, {"TERM": "xterm"}, True),
    (Terminal(), False, {}, True),
    (Terminal(), True, {"TERM": "xterm"}, False),  # --no-progress
    (Terminal(), False, {"TERM": "xterm", "SPECGATE_PROGRESS": "0"}, False),
    (Terminal(), False, {"TERM": "xterm", "SPECGATE_PROGRESS": "off"}, False),
    (Terminal(), False, {"TERM": "xterm", "SPECGATE_PROGRESS": "1"}, True),
    (Terminal(), False, {"TERM": "dumb"}, False),  # cannot redraw a line
    (io.StringIO(), False, {"TERM": "xterm"}, False),  # a pipe or a file
    (Closed(), False, {"TERM": "xterm"}, False),
])
def test_a_bar_only_on_a_terminal_nobody_asked_to_keep_plain(stream: io.StringIO, plain: bool, env: dict[str, str],
                                                            bar: bool) -> None:
    assert wants_bar(stream, plain, env) is bar


def test_plain_lines_are_the_lines_of_before_and_the_counts_print_nothing() -> None:
    """Without a terminal the Reporter is today's stderr_progress: `[probe] msg`, one line each; the bar's
    counts (expect, advance, step_done) add nothing, so logs and the tests reading them see the same lines."""
    out = io.StringIO()
    say = Reporter("[probe]", steps="cells", stream=out, bar=False)
    say("warm-up: 1 request(s) of mix m (not counted)")
    say.expect(units=9, steps=4)
    say.advance()
    say.step_done()
    say("[1/4] speculative m c=1 rep 1/2: 32 tokens in 0.50 s = 64.0 tok/s")
    say.close()
    assert out.getvalue() == ("[probe] warm-up: 1 request(s) of mix m (not counted)\n"
                              "[probe] [1/4] speculative m c=1 rep 1/2: 32 tokens in 0.50 s = 64.0 tok/s\n")


def frames(raw: str) -> list[str]:
    """The bar's frames as a terminal shows them one after another (tqdm redraws after each `\\r`)."""
    return [m.group(0) for m in BAR.finditer(raw)]


def test_bar_counts_cells_and_requests_with_an_eta_and_lines_go_above_it() -> None:
    term = Terminal()
    say = Reporter("[probe]", steps="cells", stream=term, bar=True)
    say("before the totals are known: a line only")
    assert "\r" not in term.getvalue()
    say.expect(units=10, steps=2)  # one arm
    for _ in range(5):
        say.advance()
    say.step_done()  # a step done redraws at once (not held back by tqdm's 0.2 s minimum interval)
    say("[1/2] a cell's line")
    say.expect(units=10, steps=2)  # probe ab: the other arm's campaign adds its totals
    say.close()
    raw = term.getvalue()
    got = [BAR.fullmatch(f).groups()[:5] for f in frames(raw)]  # type: ignore[union-attr]
    assert got[0] == ("0", "2", "0", "0", "10")
    assert ("1", "2", "50", "5", "10") in got
    assert got[-1] == ("1", "4", "25", "5", "20")  # the last frame, left on screen by close()
    assert "ETA ?" in frames(raw)[0]  # no rate yet: tqdm says it does not know
    # each line is whole on its own row: written after the bar's row was cleared, ended by a newline
    assert "[probe] before the totals are known: a line only\n" in raw
    assert re.search(r"\r +\r\[probe\] \[1/2\] a cell's line\n", raw)
    assert raw.endswith("ETA 00:00]\n")  # close() ends the bar's row: what follows starts on a fresh line
    say("wrote base.json: 4 cells")  # after close: plain
    assert term.getvalue().endswith("]\n[probe] wrote base.json: 4 cells\n")


def test_advance_from_worker_threads_loses_no_count() -> None:
    """The probe's worker threads call advance() as their requests end: the count must be exact."""
    term = Terminal()
    say = Reporter("[probe]", steps="cells", stream=term, bar=True)
    say.expect(units=1600, steps=1)

    def work() -> None:
        for _ in range(200):
            say.advance()

    workers = [threading.Thread(target=work) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    say.close()
    assert BAR.fullmatch(frames(term.getvalue())[-1]).groups()[3:5] == ("1600", "1600")  # type: ignore[union-attr]


def test_the_bar_is_redrawn_while_nothing_finishes() -> None:
    """A real engine's request can take minutes: the timer redraws the bar (elapsed, ETA) with no unit done. Here
    every 10 ms instead of every second; waited for up to 5 s, stopped by close()."""
    term = Terminal()
    say = Reporter("[probe]", steps="cells", stream=term, bar=True, refresh=0.01)
    say.expect(units=10, steps=1)
    deadline = time.monotonic() + 5
    while term.getvalue().count("requests 0/10") < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    say.close()
    assert term.getvalue().count("requests 0/10") >= 4  # the first frame and at least three redraws
    assert say._timer is None  # joined


def test_the_context_manager_closes_the_bar_when_the_work_fails() -> None:
    """An error's one line (gate.commands._args.invalid) must not land on the bar's row."""
    term = Terminal()
    with pytest.raises(RuntimeError), reporter("[probe]", steps="cells", stream=term) as say:
        say.expect(units=4, steps=1)
        raise RuntimeError("engine gone")
    assert term.getvalue().endswith("]\n") and not say.bar


def test_no_meter_counts_nothing() -> None:
    m = NoMeter()
    m.expect(3, 1)
    m.advance()
    m.step_done()


def probe_args(url: str, out: Path, *extra: str) -> list[str]:
    """A short probe of the replayed vLLM capture: 1 warm-up + 3 cells of 1 request (4 requests, 3 cells)."""
    return ["probe", "--engine-url", url, "--arm", "speculative", "--speculative-config", NGRAM, "--out", str(out),
            "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1", "--repetitions", "3",
            "--requests", "1", "--warmup", "1", "--no-client-ceiling", *extra]


def test_probe_without_a_terminal_prints_plain_lines_on_stderr_and_nothing_on_stdout(tmp_path: Path) -> None:
    """`specgate probe` in a subprocess with pipes (as CI, `make`, a log): the lines of before, no `\\r`, no bar,
    no ETA, stdout empty (a `--format json` consumer reading it would get nothing but its JSON); the record is
    JSON. The replay runs at 0.2x the capture's timing (a request ~0.2 s)."""
    out = tmp_path / "spec.json"
    env = {k: v for k, v in os.environ.items() if k != "SPECGATE_PROGRESS"} | {"TERM": "xterm-256color"}
    with ReplayEngine("ngram", slow=0.2) as eng:
        p = subprocess.run([sys.executable, "-m", "gate.cli", *probe_args(eng.url, out)], cwd=REPO, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert lines and all(line.startswith("[probe] ") for line in lines), p.stderr
    assert "\r" not in p.stderr and "ETA" not in p.stderr and not BAR.search(p.stderr)
    assert [line.split(":")[0] for line in lines if re.match(r"\[probe\] \[\d/3\]", line)] == [
        f"[probe] [{i}/3] speculative p8-o16 c=1 rep {i}/3" for i in (1, 2, 3)]
    assert lines[-1] == f"[probe] wrote {out}: 3 cells"
    assert len(load_record(out).cells) == 3 and json.loads(out.read_text())["arm"] == "speculative"


class Counts:
    """A Meter that records what the probe told it (gate.probe.progress.Meter)."""

    def __init__(self) -> None:
        self.expected: list[tuple[int, int]] = []
        self.units = 0
        self.steps = 0
        self.lock = threading.Lock()

    def expect(self, units: int, steps: int = 0) -> None:
        self.expected.append((units, steps))

    def advance(self, units: int = 1) -> None:
        with self.lock:
            self.units += units

    def step_done(self, steps: int = 1) -> None:
        self.steps += steps


def test_probe_ab_adds_both_arms_to_one_bar_and_counts_every_request() -> None:
    """`probe ab` on two replayed engines (the no-speculation and the ngram capture): each arm expects its own
    totals — 1 warm-up + 2 repetitions x (closed loop c=1 + open loop at 50/s, 1 request a cell) = 5 requests
    in 4 cells — and the bar's sums are what was done: every request and every cell of both arms, closed and
    open loop alike."""
    from gate.probe.runner import ProbeConfig, probe_ab
    from gate.probe.workload import MixRequest

    meter, lines = Counts(), list[str]()
    with ReplayEngine("nospec", slow=0.1) as base, ReplayEngine("ngram", slow=0.1) as spec:
        cfgs = tuple(ProbeConfig(engine_url=url, arm=arm, concurrencies=(1,), request_rates=(50.0,), repetitions=2,
                                 warmup_requests=1, requests_per_cell=1, ceiling=False, time_limit=60)
                     for url, arm in ((base.url, "baseline"), (spec.url, "speculative")))
        b, s = probe_ab((cfgs[0], cfgs[1]), MixRequest(prompt_tokens=8, output_tokens=16, concurrencies=(1,),
                                                       request_rates=(50.0,)), ("b.json", "s.json"),
                        lines.append, meter)
    assert meter.expected == [(5, 4), (5, 4)]  # per arm: 1 warm-up + 2 reps x (1 closed + 1 open) requests; 4 cells
    assert (meter.units, meter.steps) == (10, 8)
    assert len(b.cells) + len(s.cells) == meter.steps
    assert sum(c.requests for c in b.cells + s.cells) + 2 == meter.units  # + each arm's warm-up request
