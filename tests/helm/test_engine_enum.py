"""The chart's engine enum follows the registry (issue 31): `engine.kind` in values.schema.json lists, in the
registry's order, exactly the registered engines the chart has an image for.

Why: the chart is the one place outside the engine packages that lists engines by hand (JSON Schema has no
import). The chart launches an engine only from `engine.images.<kind>` (values.yaml), so the enum is
"registered and launchable": TensorRT-LLM is registered (the exporter and the gate read it) but has no image
here. A sixth engine added to `ADAPTERS` with an image and not to the enum, or an enum value no adapter
reads, fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from exporter.engines import ADAPTERS
from gate.model.engines import PROFILES

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "specgate"


def _enum() -> list[str]:
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    return list(schema["properties"]["engine"]["properties"]["kind"]["enum"])


def _images() -> list[str]:
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    return list(values["engine"]["images"])


def test_the_enum_is_the_registered_engines_with_an_image() -> None:
    assert _enum() == [k for k in ADAPTERS if k in _images()]


def test_every_image_is_a_registered_engine_on_both_sides() -> None:
    assert set(_images()) <= set(ADAPTERS) and set(_images()) <= set(PROFILES)


def test_the_drift_check_sees_a_missing_engine() -> None:
    """The rule itself: an enum that drops a launchable engine, or lists an unknown one, differs."""
    enum = _enum()
    assert enum[:-1] != [k for k in ADAPTERS if k in _images()]
    assert [*enum, "ray"] != [k for k in ADAPTERS if k in _images()]
