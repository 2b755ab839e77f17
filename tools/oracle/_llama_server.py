"""Start llama-server for an oracle recorder, wait for it, and stop it: the one start-wait-stop the llama.cpp
recorders share (tools/oracle/llamacpp_vocab.py, tools/oracle/llamacpp_spec.py)."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serving(cmd: list[str], port: int, log: Path) -> Iterator[bool]:
    """Run `cmd` (a llama-server listening on 127.0.0.1:`port`) with its output in `log`; yields True once /health
    answers 200, False if it exited first (a refusal is an answer too); stops it on leaving. Neither within
    START_TIMEOUT_S: SystemExit naming the log."""
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            up = False
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                        if r.status == 200:
                            up = True
                            break
                except OSError:
                    pass
                time.sleep(0.2)
            else:
                if proc.poll() is None:
                    raise SystemExit(f"llama-server neither came up nor exited in {START_TIMEOUT_S} s: {log}")
            yield up
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
