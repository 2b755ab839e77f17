"""`exporter once --from-file` and `exporter window` read user paths: a FIFO, `/dev/zero` or an oversized page is one
line and exit 3 at once (a real process with a timeout: before, the FIFO blocked until killed and `/dev/zero` ran
until memory ran out), and a real capture still reads as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.scrape import ScrapeError, read_page_file

VLLM = Path(__file__).parents[1] / "fixtures" / "vllm"
SPECGATE = [sys.executable, "-m", "gate.cli"]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SPECGATE, *argv], capture_output=True, text=True, timeout=20)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    f = tmp_path / "page.txt"
    os.mkfifo(f)
    return f


def test_a_fifo_is_refused_at_once(fifo: Path) -> None:
    for argv in (("exporter", "once", "--from-file", str(fifo)),
                 ("exporter", "window", str(VLLM / "metrics-ngram-before.txt"), str(fifo))):
        p = _run(*argv)
        assert p.returncode == 3, p.stderr
        assert p.stderr.strip().splitlines() == [f"specgate: error: {fifo} is not a regular file"]


def test_dev_zero_is_refused_not_read() -> None:
    p = _run("exporter", "once", "--from-file", "/dev/zero")
    assert p.returncode == 3 and "not a regular file" in p.stderr and len(p.stderr.splitlines()) == 1


def test_a_page_over_the_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"# x\n" * 300)  # 1,200 bytes against a 1,000-byte limit
    with pytest.raises(ScrapeError, match="over the 1,000-byte page limit"):
        read_page_file(big, max_bytes=1000)
    raw, mtime = read_page_file(big, max_bytes=1200)
    assert len(raw) == 1200 and mtime == big.stat().st_mtime


def test_a_real_capture_still_reads() -> None:
    p = _run("exporter", "once", "--from-file", str(VLLM / "metrics-ngram-after.txt"), "--format", "json")
    assert p.returncode == 0 and '"engine": "vllm"' in p.stdout
