"""Co-design by content (issue 36, item 2): the run record keeps each config's sha256, `--previous` compares it.

Why: with revisions unpinned (`target.revision` absent: "then None, now None"), a changed target config.json
passed `--previous` with "a change cannot be shown" as n/a. A config's content is known whether or not a
revision is: the record keeps the sha256 of its canonical JSON, and a changed hash is a target change
(a new acceptance check is needed). A co-design rule that lacks data is not checked (inconclusive), never n/a:
Gemma-3's published config has no max_position_embeddings (tests/fixtures/configs/INDEX.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gate.bill.facts import config_sha256
from gate.checks.codesign import codesign
from gate.cli import main
from tests.gate.helpers import CAPTURES, CONFIGS, tiny_plan, write_plan


def test_the_hash_is_of_the_content_not_the_file() -> None:
    a = {"hidden_size": 128, "vocab_size": 512, "text_config": {"x": [1, 2]}}
    b = json.loads(json.dumps(a, indent=4, sort_keys=False))
    assert config_sha256(a) == config_sha256(dict(reversed(list(b.items()))))  # order and whitespace do not count
    assert config_sha256(a) != config_sha256({**a, "vocab_size": 513})
    assert len(config_sha256(a)) == 64


def _unpinned(tmp_path: Path) -> tuple[Path, Path]:
    """The tiny draft plan with both configs copied beside it and no revision pinned."""
    target = tmp_path / "target.json"
    shutil.copyfile(CONFIGS / "tiny-target.json", target)
    plan = tiny_plan("draft")
    plan["target"] = {**plan["target"], "config": str(target)}
    plan["target"].pop("revision")
    plan["drafter"].pop("revision")
    return write_plan(tmp_path / "p.yaml", plan), target


def _check(capsys: pytest.CaptureFixture[str], plan: Path, *extra: str) -> dict[str, Any]:
    main(["check", "--plan", str(plan), "--format", "json", "--metrics",
          str(CAPTURES / "metrics-draft-before.txt"), str(CAPTURES / "metrics-draft-after.txt"), *extra])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _finding(doc: dict[str, Any], name: str) -> dict[str, str]:
    (f,) = [f for f in doc["checks"]["codesign"]["values"]["findings"] if f["check"] == name]
    return dict(f)


def test_the_run_record_keeps_each_configs_hash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan, target = _unpinned(tmp_path)
    rec = _check(capsys, plan)["run_record"]
    assert rec["model_config_sha256"] == config_sha256(json.loads(target.read_text()))
    assert rec["drafter_config_sha256"] == config_sha256(json.loads((CONFIGS / "tiny-draft.json").read_text()))
    assert rec["model_revision"] is None  # not pinned, and yet the content is known


def test_a_changed_config_is_a_change_with_revisions_unpinned(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    plan, target = _unpinned(tmp_path)
    record = tmp_path / "rec.json"
    first = _check(capsys, plan, "--record", str(record))
    assert first["checks"]["codesign"]["status"] == "pass"
    same = _finding(_check(capsys, plan, "--previous", str(record)), "target_revision")
    assert same["status"] == "pass" and "target config unchanged" in same["detail"], same
    cfg = json.loads(target.read_text())
    cfg["rms_norm_eps"] = 1e-5 if cfg.get("rms_norm_eps") != 1e-5 else 1e-6  # any value: the content changed
    target.write_text(json.dumps(cfg))
    doc = _check(capsys, plan, "--previous", str(record))
    f = _finding(doc, "target_revision")
    # the captures' engine started before the record was written: no newer acceptance evidence
    assert f["status"] == "inconclusive" and "target changed: a new acceptance check is needed" in f["detail"], f
    assert f"config sha256 {first['run_record']['model_config_sha256'][:12]} → " in f["detail"]
    assert doc["checks"]["codesign"]["status"] == "inconclusive" and doc["decision"] != "pass"


def test_a_record_without_hash_or_revision_cannot_rule_out_a_change(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    plan, _ = _unpinned(tmp_path)
    record = tmp_path / "rec.json"
    _check(capsys, plan, "--record", str(record))
    old = json.loads(record.read_text())
    old.pop("model_config_sha256")  # a record written before the hash was kept
    record.write_text(json.dumps(old))
    f = _finding(_check(capsys, plan, "--previous", str(record)), "target_revision")
    assert f["status"] == "inconclusive", f  # was n/a: "then None, now None: a change cannot be shown"
    assert "neither shown nor ruled out" in f["detail"] and "model_config_sha256" in f["detail"]


def test_a_rule_lacking_data_is_not_checked_not_na() -> None:
    """Gemma-3's config has no max_position_embeddings; with no served length the context rule has nothing to
    compare the draft's 32,768 with: inconclusive, naming the key that helps; with it, a pass."""
    gemma = json.loads((CONFIGS / "target-hybrid-swa__google__gemma-3-27b-it.json").read_text())
    draft = json.loads((CONFIGS / "target-hybrid-swa__mariocde__functiongemma-270m-onnx.json").read_text())
    res = codesign(gemma, draft, engine="llamacpp", depth=8, method="draft_model")
    (f,) = [f for f in res.findings if f.check == "context_length"]
    assert f.status.value == "inconclusive", f
    assert "the target declares no max_position_embeddings" in f.detail and "engine.context_cap_tokens" in f.detail
    res = codesign(gemma, draft, engine="llamacpp", depth=8, method="draft_model", max_model_len=32_768)
    (f,) = [f for f in res.findings if f.check == "context_length"]
    assert f.status.value == "pass", f
