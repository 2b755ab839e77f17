"""What must stay in sync: the chart's copies of the rules and the dashboard with their sources (Helm
cannot read outside the chart; `make chart-sync` copies them), and values.schema.json with values.yaml."""

from __future__ import annotations

import filecmp
import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.helm.render import CHART, REPO, SYNCED_FILES, default_values

SCHEMA = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("source", list(SYNCED_FILES), ids=lambda p: p.name)
def test_chart_copy_equals_its_source(source: Path) -> None:
    copy = SYNCED_FILES[source]
    if not source.exists():
        assert not copy.exists(), f"{copy.relative_to(REPO)} exists but its source {source.relative_to(REPO)} does not"
        return
    assert copy.exists(), f"{copy.relative_to(REPO)} is missing: run `make chart-sync`"
    assert copy.read_bytes() == source.read_bytes(), (
        f"{copy.relative_to(REPO)} differs from {source.relative_to(REPO)}: run `make chart-sync`")


def test_make_chart_sync_writes_exact_copies(tmp_path: Path) -> None:
    """Run the real make target against a scratch chart directory (CHART=...), so the repository's own
    copies stay as committed and drift remains visible to the test above."""
    proc = subprocess.run(["make", "-s", "chart-sync", f"CHART={tmp_path}", f"MIXIN={tmp_path}/mixin"], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False)
    missing = [s for s in SYNCED_FILES if not s.exists()]
    if missing:
        assert proc.returncode != 0, "chart-sync must fail when a source is missing"
        return
    assert proc.returncode == 0, proc.stderr
    for source, copy in SYNCED_FILES.items():
        written = tmp_path / copy.relative_to(CHART)
        assert filecmp.cmp(source, written, shallow=False), written


# --- values.schema.json <-> values.yaml --------------------------------------------------------------

def value_paths(values: Any, schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Key paths of values.yaml, descending only where the schema describes the keys (free-form maps such as
    resources, speculativeConfig or the plan stop at their own key)."""
    out: set[str] = set()
    if not isinstance(values, dict) or "properties" not in schema:
        return out
    for k, v in values.items():
        path = f"{prefix}.{k}" if prefix else k
        out.add(path)
        out |= value_paths(v, schema.get("properties", {}).get(k, {}), path)
    return out


def schema_paths(schema: dict[str, Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for k, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{k}" if prefix else k
        out.add(path)
        out |= schema_paths(sub, path)
    return out


def object_schemas(schema: dict[str, Any], prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = [(prefix or "(root)", schema)] if "properties" in schema else []
    for k, sub in schema.get("properties", {}).items():
        out += object_schemas(sub, f"{prefix}.{k}" if prefix else k)
    return out


def test_values_yaml_validates_against_the_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    errors = sorted(jsonschema.Draft7Validator(SCHEMA).iter_errors(default_values()), key=str)
    assert not errors, "\n".join(e.message for e in errors)


def test_every_values_key_is_in_the_schema_and_back() -> None:
    values = default_values()
    in_values = value_paths(values, SCHEMA)
    in_schema = schema_paths(SCHEMA)
    assert sorted(in_values - in_schema) == [], "keys in values.yaml the schema does not describe"
    assert sorted(in_schema - in_values) == [], "keys in the schema that values.yaml does not set"


def test_schema_objects_are_closed() -> None:
    """Every described object rejects unknown keys, so a typo in -f values fails instead of being ignored."""
    for path, sub in object_schemas(SCHEMA):
        assert sub.get("additionalProperties") is False, path


def test_schema_sync_check_can_fail() -> None:
    values = default_values()
    values["engine"]["newKnob"] = 1
    assert "engine.newKnob" in value_paths(values, SCHEMA) - schema_paths(SCHEMA)
    assert list(jsonschema.Draft7Validator(SCHEMA).iter_errors(values))
