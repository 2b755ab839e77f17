"""Every file a user hands a gate command is read through gate.inputs (design.md "Floors", floor 1).

For each reader that used to open its file itself — `serve --token-file`, the plan's Prometheus
`bearer_token_file` / `basic_auth.password_file`, the controller's plan, `probe --prompts` — the real CLI,
run as a process: a FIFO (which blocks a plain `open()` until a writer comes) is refused at once, a file over
its kind's limit is refused before it is read, and each is one line on stderr with exit 3. A secret's
content never appears in a message.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate.inputs.loading import PLAN_LIMITS, PROMPTS_LIMITS, SECRET_LIMITS
from tests.gate.helpers import tiny_plan

SECRET = "s3cret-do-not-print"


def specgate(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it; 30 s is ample for an answer and far short of a FIFO's forever."""
    return subprocess.run([sys.executable, "-m", "gate.cli", *args], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "SPECGATE_GATE_TOKEN": ""})


def one_line_exit_3(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert r.returncode == 3, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    assert SECRET not in r.stderr + r.stdout


def fifo(tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    os.mkfifo(p)
    return p


def oversized(tmp_path: Path, name: str, limit: int, text: str = "") -> Path:
    """A file one byte over `limit`: a secret repeated, or sparse (nothing is written, nothing need be read)."""
    p = tmp_path / name
    if text:
        p.write_text((text * (limit // len(text) + 2))[: limit + 1])
    else:
        with open(p, "wb") as f:
            f.truncate(limit + 1)
    return p


def plan_file(tmp_path: Path, **prometheus: object) -> Path:
    data = tiny_plan("draft")
    if prometheus:
        data["evidence"] = {"prometheus": {"url": "http://127.0.0.1:9", **prometheus}}
    p = tmp_path / "plan.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


# ---- specgate serve --token-file


def test_serve_token_fifo_refused_at_once(tmp_path: Path) -> None:
    r = specgate("serve", "--plan", str(plan_file(tmp_path)), "--token-file", str(fifo(tmp_path, "token")),
                 "--listen", "127.0.0.1:0")
    one_line_exit_3(r, "token file", "is a FIFO, not a regular file")


def test_serve_token_oversized_refused_without_its_content(tmp_path: Path) -> None:
    big = oversized(tmp_path, "token", SECRET_LIMITS.max_bytes, SECRET)
    r = specgate("serve", "--plan", str(plan_file(tmp_path)), "--token-file", str(big), "--listen", "127.0.0.1:0")
    one_line_exit_3(r, "token file", f"over the {SECRET_LIMITS.max_bytes:,}-byte limit")


def test_serve_token_not_text_refused_without_its_content(tmp_path: Path) -> None:
    bad = tmp_path / "token"
    bad.write_bytes(SECRET.encode() + b"\xff\xfe")
    r = specgate("serve", "--plan", str(plan_file(tmp_path)), "--token-file", str(bad), "--listen", "127.0.0.1:0")
    one_line_exit_3(r, "token file", "not UTF-8 text")


# ---- the plan's Prometheus secrets (specgate check --phase post)


@pytest.mark.parametrize("key", ["bearer_token_file", "password_file"])
def test_prometheus_secret_fifo_refused_at_once(tmp_path: Path, key: str) -> None:
    secret = str(fifo(tmp_path, "secret"))
    extra = ({"bearer_token_file": secret} if key == "bearer_token_file"
             else {"basic_auth": {"username": "u", "password_file": secret}})
    r = specgate("check", "--plan", str(plan_file(tmp_path, **extra)), "--phase", "post")
    one_line_exit_3(r, "evidence.prometheus", "is a FIFO, not a regular file")


@pytest.mark.parametrize("key", ["bearer_token_file", "password_file"])
def test_prometheus_secret_oversized_refused_without_its_content(tmp_path: Path, key: str) -> None:
    secret = str(oversized(tmp_path, "secret", SECRET_LIMITS.max_bytes, SECRET))
    extra = ({"bearer_token_file": secret} if key == "bearer_token_file"
             else {"basic_auth": {"username": "u", "password_file": secret}})
    r = specgate("check", "--plan", str(plan_file(tmp_path, **extra)), "--phase", "post")
    one_line_exit_3(r, "evidence.prometheus", f"over the {SECRET_LIMITS.max_bytes:,}-byte limit")


# ---- specgate controller --plan


def test_controller_plan_fifo_refused_at_once(tmp_path: Path) -> None:
    r = specgate("controller", "--plan", str(fifo(tmp_path, "plan.yaml")), "--namespace", "llm",
                 "--metrics-listen", "")
    one_line_exit_3(r, "invalid plan", "is a FIFO, not a regular file")


def test_controller_plan_oversized_refused(tmp_path: Path) -> None:
    r = specgate("controller", "--plan", str(oversized(tmp_path, "plan.yaml", PLAN_LIMITS.max_bytes)),
                 "--namespace", "llm", "--metrics-listen", "")
    one_line_exit_3(r, "invalid plan", f"over the {PLAN_LIMITS.max_bytes:,}-byte limit")


# ---- specgate probe --prompts (read before the engine is contacted: port 9 never answers)


def test_probe_prompts_fifo_refused_before_the_engine(tmp_path: Path) -> None:
    r = specgate("probe", "--engine-url", "http://127.0.0.1:9", "--arm", "baseline", "--out",
                 str(tmp_path / "o.json"), "--prompts", str(fifo(tmp_path, "p.jsonl")), "--output-tokens", "4",
                 "--concurrency", "1")
    one_line_exit_3(r, "prompts", "is a FIFO, not a regular file")
    assert not (tmp_path / "o.json").exists()


def test_probe_prompts_oversized_refused(tmp_path: Path) -> None:
    big = oversized(tmp_path, "p.jsonl", PROMPTS_LIMITS.max_bytes)
    r = specgate("probe", "--engine-url", "http://127.0.0.1:9", "--arm", "baseline", "--out",
                 str(tmp_path / "o.json"), "--prompts", str(big), "--output-tokens", "4", "--concurrency", "1")
    one_line_exit_3(r, "prompts", f"over the {PROMPTS_LIMITS.max_bytes:,}-byte limit")


def test_probe_prompts_line_limits(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "a", "prompt": "b"}\n')
    r = specgate("probe", "--engine-url", "http://127.0.0.1:9", "--arm", "baseline", "--out",
                 str(tmp_path / "o.json"), "--prompts", str(p), "--output-tokens", "4", "--concurrency", "1")
    one_line_exit_3(r, "p.jsonl:1", "duplicate key 'prompt'")
