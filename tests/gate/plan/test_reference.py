"""docs/reference/plan.md and examples/plans/plan.schema.json are what gate/plan/model.py gives now.

Why: the reference is generated (gate.plan.reference); a key that lands in the model without
`make reference` would leave the newcomer's only documentation wrong. Also: every key has
a description, the schema is valid JSON Schema and accepts (rejects) what the model accepts
(rejects) on the example plans, `specgate schema plan` prints it, and unknown keys get a
suggestion from the whole schema.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gate.cli import main
from gate.plan import reference as ref
from gate.plan.model import Plan, PlanError, plan_from_dict
from gate.plan.suggest import model_in

REPO = Path(__file__).resolve().parents[3]


def test_committed_reference_and_schema_match_the_model() -> None:
    assert ref.SCHEMA.read_text(encoding="utf-8") == ref.schema_text(), "run make reference"
    assert ref.REFERENCE.read_text(encoding="utf-8") == ref.render_reference(), "run make reference"


def test_every_key_is_described_and_in_the_reference() -> None:
    text = ref.REFERENCE.read_text(encoding="utf-8")
    missing: list[str] = []

    def walk(model: Any, prefix: str) -> None:
        for name, info in model.model_fields.items():
            if name in ref.INTERNAL:
                continue
            if not info.description:
                missing.append(prefix + name)
            assert f"| `{name}` |" in text
            sub = model_in(info.annotation)
            if sub is not None:
                walk(sub, f"{prefix}{name}.")

    walk(Plan, "")
    assert missing == []
    # the per-engine memory semantics a newcomer had to read from SGLang's source
    assert "--mem-fraction-static" in text and "per GPU (per TP rank)" in text


def test_schema_is_valid_and_agrees_with_the_model_on_the_examples() -> None:
    schema = ref.plan_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    plans = sorted((REPO / "examples" / "plans").rglob("*.yaml"))
    assert plans
    for p in plans:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
        assert list(validator.iter_errors(data)) == [], p
    bad = yaml.safe_load((REPO / "examples/plans/seed004-qwen3.6-35b-a3b-mtp.yaml").read_text(encoding="utf-8"))
    bad["budgets"] = {"startup": 10}
    assert list(validator.iter_errors(bad))
    with pytest.raises(PlanError):
        plan_from_dict(bad)


def test_schema_command_prints_it(tmp_path: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["schema", "plan"]) == 0
    assert json.loads(out.getvalue())["title"] == "specgate rollout plan"
    assert main(["schema", "plan", "--out", str(tmp_path / "s.json")]) == 0
    assert (tmp_path / "s.json").read_text(encoding="utf-8") == ref.schema_text()


def test_every_example_plan_points_at_the_schema() -> None:
    for p in sorted((REPO / "examples" / "plans").glob("*/*.yaml")):
        first = p.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), p
        assert (p.parent / first.split("=", 1)[1]).resolve() == ref.SCHEMA, p


BASE: dict[str, Any] = {"name": "x", "target": {"name": "t"}, "engine": {"kind": "vllm"}}


@pytest.mark.parametrize("section,key,hint", [
    ("staging", "startup_seconds", "budgets.startup_seconds"),   # a startup budget is not staging.load_seconds
    ("staging", "startup_budget", "budgets.startup_seconds"),
    ("engine", "gpu_memory_utilization", "engine.memory_fraction"),
    ("engine", "mem_fraction_static", "engine.memory_fraction"),
    ("slo", "target", "target_acceptance_length"),
    ("slo", "min_draft", "min_drafts"),                           # siblings keep their short name
    ("budgets", "storage", "storage_bytes"),
])
def test_unknown_keys_suggest_from_the_whole_schema(section: str, key: str, hint: str) -> None:
    data = json.loads(json.dumps(BASE))
    data.setdefault(section, {})[key] = 1
    with pytest.raises(PlanError, match=rf"{section}\.{key}: unknown key \(did you mean {hint}\?\)"):
        plan_from_dict(data)


def test_runbooks_acceptance_key_exists() -> None:
    """The runbook once told users to set `acceptance.slo`, which no plan accepts."""
    text = (REPO / "docs" / "runbook.md").read_text(encoding="utf-8")
    assert "acceptance.slo" not in text and "slo.target_acceptance_length" in text
    data = json.loads(json.dumps(BASE))
    data["acceptance"] = {"slo": 2}
    with pytest.raises(PlanError, match=r"acceptance: unknown key \(did you mean slo\?\)"):
        plan_from_dict(data)


def test_no_default_is_hidden_from_the_reference() -> None:
    """A key whose default is a non-empty list or a value must show it in the schema (and so in the reference):
    a `default_factory` is invisible to the JSON Schema, which made `fleet.pod_labels` read "(empty)"."""
    from pydantic import BaseModel

    hidden: list[str] = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        props = model.model_json_schema(mode="validation").get("properties", {})
        for name, info in model.model_fields.items():
            sub = model_in(info.annotation)
            if sub is not None:
                walk(sub, f"{prefix}{name}.")
                continue
            if info.default_factory is not None:
                value = info.default_factory()  # type: ignore[call-arg]
                if value not in ([], {}, None) and "default" not in props.get(info.alias or name, {}):
                    hidden.append(prefix + name)

    walk(Plan, "")
    assert hidden == []
