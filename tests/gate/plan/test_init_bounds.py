"""`specgate init` refuses what its plan loader would refuse and never blocks on --out (issue 21, item 8):
k above MAX_SPECULATIVE_DEPTH, SGLang draft tokens above 16 × that, and a non-regular --out (a FIFO, a
directory, a device) are one line, exit 3, at once; the controls write plans that load."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gate.cli import main
from gate.model.depth import MAX_SPECULATIVE_DEPTH
from gate.plan.model import load_plan
from tests.gate.helpers import CONFIGS

QWEN = CONFIGS / "target-gqa__Qwen__Qwen3-8B.json"
TINY = CONFIGS / "tiny-target.json"
DFLASH = CONFIGS / "dflash__specforge__qwen3-8b-dflash.json"


def _init(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    t0 = time.perf_counter()
    try:
        rc = main(["init", *argv])
    except SystemExit as e:  # usage errors exit through argparse (3: exit_invalid_on_usage_error)
        rc = int(e.code or 0)
    assert time.perf_counter() - t0 < 20
    out = capsys.readouterr()
    return rc, out.out, out.err


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc, out, err = _init(capsys, *argv)
    assert rc == 3 and not out.strip(), (rc, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(("engine", "method"), [("vllm", "ngram"), ("vllm", "suffix"), ("sglang", "ngram")])
@pytest.mark.parametrize("k", [MAX_SPECULATIVE_DEPTH + 1, 1000, 10**9])
def test_a_depth_the_loader_refuses_is_not_written(capsys: pytest.CaptureFixture[str], engine: str, method: str,
                                                   k: int) -> None:
    err = _refused(capsys, "--target", str(TINY), "--engine", engine, "--method", method,
                   "--num-speculative-tokens", str(k))
    assert "would not load" in err


def test_sglang_draft_tokens_above_the_loaders_bound_are_not_written(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A DFlash drafter's block_size becomes SGLang's num_draft_tokens: 2,000 is no plan the loader takes."""
    cfg = json.loads(DFLASH.read_text(encoding="utf-8"))
    for holder in (cfg, cfg.get("dflash_config") or {}):
        if "block_size" in holder:
            holder["block_size"] = 2_000  # under the config bound (4,096), over the loader's 1,024
    (tmp_path / "d.json").write_text(json.dumps(cfg), encoding="utf-8")
    err = _refused(capsys, "--target", str(QWEN), "--drafter", str(tmp_path / "d.json"), "--engine", "sglang",
                   "--method", "dflash", "--out", str(tmp_path / "p.yaml"))
    assert "would not load" in err and "num_draft_tokens" in err
    assert not (tmp_path / "p.yaml").exists()


def test_the_deepest_depth_the_loader_takes_is_written_and_loads(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.yaml"
    rc, _, err = _init(capsys, "--target", str(TINY), "--engine", "vllm", "--method", "ngram",
                       "--num-speculative-tokens", str(MAX_SPECULATIVE_DEPTH), "--out", str(out))
    assert rc == 0, err
    assert load_plan(out).depth == MAX_SPECULATIVE_DEPTH


@pytest.mark.parametrize("force", [False, True])
def test_a_fifo_out_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str], force: bool) -> None:
    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)
    err = _refused(capsys, "--target", str(TINY), "--engine", "vllm", "--method", "ngram", "--out", str(fifo),
                   *(["--force"] if force else []))
    assert "not a regular file" in err


@pytest.mark.parametrize("force", [False, True])
def test_a_directory_or_device_out_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], force: bool) -> None:
    extra = ["--force"] if force else []
    for target in (tmp_path, Path("/dev/null")):
        link = tmp_path / "link.yaml"
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
        err = _refused(capsys, "--target", str(TINY), "--engine", "vllm", "--method", "ngram", "--out", str(link),
                       *extra)
        assert "not a regular file" in err


def test_an_existing_regular_out_needs_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.yaml"
    out.write_text("OLD-PLAN-TEXT\n", encoding="utf-8")
    assert "use --force" in _refused(capsys, "--target", str(TINY), "--engine", "vllm", "--method", "ngram",
                                     "--out", str(out))
    rc, _, _ = _init(capsys, "--target", str(TINY), "--engine", "vllm", "--method", "ngram", "--out", str(out),
                     "--force")
    assert rc == 0 and load_plan(out).method == "ngram" and "OLD-PLAN-TEXT" not in out.read_text(encoding="utf-8")
