"""`specgate kv` and `specgate codesign`: the DESIGN.md command-line contract (JSON shapes, exit codes, errors)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gate.cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
LLAMA = str(CONFIGS / "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json")
QWEN3 = str(CONFIGS / "target-gqa__Qwen__Qwen3-8B.json")
DSV3 = str(CONFIGS / "target-mla-mtp__deepseek-ai__DeepSeek-V3.json")
GPT_OSS = str(CONFIGS / "target-hybrid-swa__openai__gpt-oss-120b.json")
DFLASH = str(CONFIGS / "dflash__specforge__qwen3-8b-dflash.json")
EAGLE3_DSV3 = str(CONFIGS / "eagle3__specforge__deepseek-v3-671b-eagle3.json")
EAGLE3_LLAMA = str(CONFIGS / "eagle3__specforge__llama3-8B-eagle3.json")


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict]:
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)  # stdout holds only the JSON document


def assert_one_line_error(capsys: pytest.CaptureFixture[str], rc: int, needle: str) -> None:
    captured = capsys.readouterr()
    assert rc == 3
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specgate: error:") and needle in lines[0]
    assert "Traceback" not in captured.err


def test_kv_json_llama(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json(capsys, ["kv", LLAMA, "--format", "json"])
    assert rc == 0 and set(doc) == {"bytes_per_token", "breakdown"}
    # 32 layers × 2 × 8 KV heads × 128 (4096 / 32) × 2 B.
    assert doc["bytes_per_token"] == 131_072
    assert doc["breakdown"]["full_attention"]["layers"] == 32 and doc["breakdown"]["dtype"] == "bf16"


def test_kv_json_deepseek_mtp_in_breakdown_only(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json(capsys, ["kv", DSV3, "--format", "json"])
    # 61 × (512 + 64) × 2 = 70,272; the one MTP layer's 1,152 is in the breakdown.
    assert rc == 0 and doc["bytes_per_token"] == 70_272
    assert doc["breakdown"]["mtp"]["bytes_per_token"] == 1_152
    # Unknown values are null: MLA has no GQA heads.
    assert doc["breakdown"]["num_key_value_heads"] is None


def test_kv_dtype_and_tp(capsys: pytest.CaptureFixture[str]) -> None:
    # gpt-oss-120b, fp8, TP 2: 18 full layers × 2 × (8 // 2) × 64 × 1 B = 9,216.
    rc, doc = run_json(capsys, ["kv", GPT_OSS, "--dtype", "fp8", "--tp", "2", "--format", "json"])
    assert rc == 0 and doc["bytes_per_token"] == 9_216
    assert doc["breakdown"]["sliding_attention"]["window"] == 128


def test_kv_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kv", QWEN3]) == 0
    out = capsys.readouterr().out
    assert "147,456" in out and "36 layers" in out


def test_kv_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert_one_line_error(capsys, main(["kv", str(tmp_path / "missing.json"), "--format", "json"]), "not found")
    no_layers = tmp_path / "no_layers.json"
    no_layers.write_text(json.dumps({"hidden_size": 4096, "num_attention_heads": 32}))
    assert_one_line_error(capsys, main(["kv", str(no_layers), "--format", "json"]), "num_hidden_layers")
    broken = tmp_path / "broken.json"
    broken.write_text('{"num_hidden_layers": 2,')
    assert_one_line_error(capsys, main(["kv", str(broken)]), "not valid JSON")


def test_kv_usage_errors_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["kv", LLAMA, "--dtype", "int4"], ["kv", LLAMA, "--tp", "0"], ["kv"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 3
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("specgate: error:")


def test_codesign_pass_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json(capsys, ["codesign", QWEN3, DFLASH, "--engine", "vllm",
                                "--num-speculative-tokens", "15", "--format", "json"])
    assert rc == 0 and doc["status"] == "pass" and set(doc) == {"status", "findings"}
    assert all(set(f) == {"check", "status", "detail"} for f in doc["findings"])
    checks = {f["check"]: f["status"] for f in doc["findings"]}
    assert checks["dflash_taps"] == checks["block_size"] == "pass"


def test_codesign_fail_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    # DeepSeek-V3's EAGLE-3 head on Llama-3.1-8B: tap 57 of 32 layers, hidden and vocab mismatch.
    rc, doc = run_json(capsys, ["codesign", LLAMA, EAGLE3_DSV3, "--engine", "sglang", "--format", "json"])
    assert rc == 1 and doc["status"] == "fail"
    taps = next(f for f in doc["findings"] if f["check"] == "eagle3_taps")
    assert taps["status"] == "fail" and "SGLang convention" in taps["detail"]
    # DFlash K 16 > block_size 16 - 1: vLLM 0.32 runs it as given (no clamp, no error), so a warning, not a fail.
    assert main(["codesign", QWEN3, DFLASH, "--num-speculative-tokens", "16"]) == 0
    out = capsys.readouterr().out
    assert "untrained positions" in out and "FAIL" not in out


def test_codesign_warn_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    # SpecForge's Llama-3 EAGLE-3 head: trained at 2,048 positions, d2t not visible → warn.
    rc, doc = run_json(capsys, ["codesign", LLAMA, EAGLE3_LLAMA, "--format", "json"])
    assert rc == 0 and doc["status"] == "warn"


def test_codesign_mtp_and_no_drafter(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json(capsys, ["codesign", DSV3, "none", "--num-speculative-tokens", "3", "--format", "json"])
    assert rc == 0 and doc["status"] == "pass"
    assert any(f["check"] == "mtp_depth" and f["status"] == "pass" for f in doc["findings"])
    rc, doc = run_json(capsys, ["codesign", LLAMA, "none", "--format", "json"])
    assert rc == 0 and doc["status"] == "n/a"


def test_codesign_invalid_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert_one_line_error(capsys, main(["codesign", QWEN3, str(tmp_path / "nope.json"), "--format", "json"]),
                          "not found")
    with pytest.raises(SystemExit) as e:
        main(["codesign", QWEN3, DFLASH, "--engine", "tgi"])  # no profile knows it
    assert e.value.code == 3
    capsys.readouterr()


def test_console_script_subprocess() -> None:
    # The installed console script, as CI runs it (same virtualenv as this interpreter).
    exe = Path(sys.executable).parent / "specgate"
    proc = subprocess.run([str(exe), "kv", QWEN3, "--format", "json"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["bytes_per_token"] == 147_456
    proc = subprocess.run([str(exe), "codesign", LLAMA, DFLASH, "--format", "json"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 1 and json.loads(proc.stdout)["status"] == "fail"
