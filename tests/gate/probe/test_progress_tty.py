"""`specgate probe` in a real terminal: tmux (a pseudo-terminal, 120 x 30) runs the command typed by send-keys,
and what a person would see is read back with capture-pane (issue 24: "the progress bar is seen in a tmux
capture"); pipe-pane records every byte the terminal got, so the frames drawn while the probe ran are seen too. The engine is the replayed vLLM capture (tests/gate/probe/probe_replay.py) at 0.2x its timing, so a
probe of 1 warm-up and 3 cells of 1 request takes about a second.

tmux must be installed (`apt-get install tmux`; /usr/bin/tmux here): without it this test fails, it does not
skip — a skipped terminal test would let a broken bar through unseen. Its own tmux server (`-L`, a socket of
this test's) keeps it apart from any tmux the machine runs, and is killed at the end.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gate.probe.probe_replay import ReplayEngine
from tests.gate.probe.test_progress import BAR, probe_args

REPO = Path(__file__).resolve().parents[3]
WIDTH, HEIGHT = 120, 30


class Tmux:
    """One detached session on a server of its own; `run` types a command and waits for its exit line."""

    def __init__(self, tmux: str, socket: str) -> None:
        self.base = [tmux, "-L", socket, "-f", "/dev/null"]  # no ~/.tmux.conf: the stock terminal

    def __call__(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], check=True, capture_output=True, text=True, timeout=10).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "t")

    def run(self, command: str, mark: str, timeout: float = 40.0) -> str:
        """Type `command; echo MARK $?`, wait until the MARK line shows, return the screen."""
        self("send-keys", "-t", "t", f"{command}; echo {mark} $?", "Enter")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(rf"^{mark} \d+$", screen, re.M):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{command!r} did not finish in {timeout:g} s; the screen:\n{self.screen()}")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    exe = shutil.which("tmux")
    if exe is None:
        pytest.fail("tmux is not installed (apt-get install tmux): the progress bar cannot be seen in a terminal")
    t = Tmux(exe, f"specgate-test-{os.getpid()}")
    # a plain shell with no rc files, so the screen holds only what the commands print
    t("new-session", "-d", "-s", "t", "-x", str(WIDTH), "-y", str(HEIGHT), "-c", str(REPO),
      "env -i PATH=/usr/bin:/bin HOME=" + shlex.quote(str(tmp_path)) + " TERM=tmux-256color PS1='$ ' "
      "bash --norc --noprofile")
    t("pipe-pane", "-t", "t", "-o", f"cat >> {shlex.quote(str(tmp_path / 'tty.raw'))}")
    try:
        yield t
    finally:
        subprocess.run([*t.base, "kill-server"], capture_output=True, timeout=10)


def test_the_bar_is_seen_in_a_terminal_and_plain_lines_when_asked(tmux: Tmux, tmp_path: Path) -> None:
    cmd = shlex.join([sys.executable, "-m", "gate.cli"])
    with ReplayEngine("ngram", slow=0.2) as eng:
        bar_screen = tmux.run(f"{cmd} {shlex.join(probe_args(eng.url, tmp_path / 'a.json'))}", "EXIT-A")
        tmux("send-keys", "-t", "t", "clear", "Enter")
        plain_screen = tmux.run(f"SPECGATE_PROGRESS=0 {cmd} "
                                f"{shlex.join(probe_args(eng.url, tmp_path / 'b.json', '--no-progress'))}", "EXIT-B")
    assert "EXIT-A 0" in bar_screen, bar_screen
    rows = bar_screen.splitlines()
    bars = [r for r in rows if BAR.search(r)]
    # one bar row on screen, its last frame: 3 of 3 cells, 4 of 4 requests (3 cells + the warm-up), an ETA
    assert len(bars) == 1, bar_screen
    cells, cells_total, pct, done, total, elapsed, eta = BAR.search(bars[0]).groups()  # type: ignore[union-attr]
    assert (cells, cells_total, pct, done, total, eta) == ("3", "3", "100", "4", "4", "00:00"), bars[0]
    assert len(bars[0]) <= WIDTH  # fits the terminal's width: drawn on one row, not wrapped
    # the lines went above the bar, each whole on its own row, and `wrote` below it once the bar was closed
    at = rows.index(bars[0])
    cell_rows = [r for r in rows[:at] if re.match(r"\[probe\] \[\d/3\] speculative p8-o16 c=1 rep \d/3: ", r)]
    assert len(cell_rows) == 3, bar_screen
    assert any(r.startswith("[probe] warm-up: 1 request(s)") for r in rows[:at]), bar_screen
    assert rows[at + 1] == f"[probe] wrote {tmp_path / 'a.json'}: 3 cells", bar_screen
    # while it ran: a frame per cell at least (a cell done redraws at once), each after the first with an ETA
    # from the rate so far (a time, not tqdm's "?" for no rate yet)
    raw = (tmp_path / "tty.raw").read_bytes().decode("utf-8", "replace")
    seen = {(m.group(1), m.group(4), m.group(7)) for m in BAR.finditer(raw.split("EXIT-A 0")[0])}
    for c in ("1", "2"):
        assert any(cells == c and re.fullmatch(r"\d\d:\d\d", eta) for cells, _, eta in seen), sorted(seen)

    assert "EXIT-B 0" in plain_screen, plain_screen
    assert not BAR.search(plain_screen) and "ETA" not in plain_screen, plain_screen
    assert sum(bool(re.match(r"\[probe\] \[\d/3\] ", r)) for r in plain_screen.splitlines()) == 3, plain_screen
