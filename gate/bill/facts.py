"""Local artifact evidence: the configs and weights a plan points at, read from disk.

Why its own module: the budget and every line read the same config and the same byte
counts (and the co-design line whether the drafter's weights hold the `d2t` vocabulary
mapping); reading them once here keeps the lines consistent and puts all file I/O at the
edge: the lines read no files. A plan naming a file that is not there is invalid input (PlanError, exit 3); a
config that lacks what a computation needs is reported by that computation as unknown.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from gate.inputs.configs import load_config
from gate.model.config import ConfigError, ModelConfig, num_hidden_layers
from gate.plan.model import ModelRef, Plan, PlanError


@dataclass(frozen=True)
class ModelFacts:
    """One artifact as far as the files and the plan tell: its config and its weight bytes."""

    role: str
    name: str | None
    revision: str | None
    config: ModelConfig | None  # resolved once here, read by the geometry and the co-design line
    config_source: str | None
    weights_bytes: int | None
    weights_source: str | None
    weights_note: str | None = None
    # the drafter's safetensors hold the `d2t` draft-to-target vocabulary mapping a reduced draft
    # vocabulary needs (None: no weights readable, or not a drafter)
    d2t_tensor: bool | None = None
    # sha256 of the config's canonical JSON (`config_sha256`): what the run record keeps, so that `--previous`
    # sees a changed config.json whether or not a revision is pinned (issue 36, co-design by content)
    config_sha256: str | None = None


def config_sha256(raw: dict[str, Any]) -> str:
    """sha256 of a config as canonical JSON (keys sorted, no spaces, UTF-8): the same content, whatever its
    file's key order or whitespace, gives the same hash; any changed value gives another."""
    text = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ArtifactFacts:
    target: ModelFacts
    drafter: ModelFacts | None


def _config(ref: ModelRef, role: str) -> tuple[ModelConfig | None, str | None]:
    if ref.config is not None:
        try:
            cfg = ModelConfig.of(load_config(ref.config))
            num_hidden_layers(cfg, f"{role} config {ref.config}")
        except ConfigError as e:
            raise PlanError(f"{role}.config: {e}") from None
        return cfg, str(ref.config)
    if ref.geometry is not None:
        return ModelConfig.of(dict(ref.geometry)), "inline geometry in the plan"
    return None, None


def _weights(ref: ModelRef, role: str) -> tuple[int | None, str | None, str | None]:
    """Byte count of an artifact's weights, via gate.inputs.weights (index total_size, shard headers, declared, params × dtype)."""
    w = ref.weights
    if w is None:
        return None, None, "no weights given in the plan"
    from gate.inputs import weights as weights_mod

    try:
        found = weights_mod.artifact_bytes(w.path, declared_bytes=w.bytes, parameter_count=w.parameters,
                                           dtype=None if w.dtype in (None, "auto") else w.dtype)
    except (ConfigError, ValueError, OSError) as e:
        raise PlanError(f"{role}.weights: {e}") from None
    if found is None:
        return None, None, "weights size unknown"
    source = f"{found.source}: {found.detail}"
    if w.source:
        source = f"{source} ({w.source})"
    return int(found.bytes), source, None


def _d2t_tensor(ref: ModelRef, role: str) -> bool | None:
    """Whether a drafter's weights hold `d2t` (gate.inputs.weights.has_tensor; None without weights)."""
    if role != "drafter" or ref.weights is None or ref.weights.path is None:
        return None
    from gate.inputs import weights as weights_mod

    try:
        return weights_mod.has_tensor(ref.weights.path, "d2t")
    except (ConfigError, ValueError, OSError) as e:
        raise PlanError(f"{role}.weights: {e}") from None


def model_facts(ref: ModelRef | None, role: str) -> ModelFacts | None:
    if ref is None:
        return None
    cfg, cfg_source = _config(ref, role)
    wbytes, wsource, wnote = _weights(ref, role)
    return ModelFacts(role=role, name=ref.name, revision=ref.revision, config=cfg, config_source=cfg_source,
                      weights_bytes=wbytes, weights_source=wsource, weights_note=wnote,
                      d2t_tensor=_d2t_tensor(ref, role),
                      config_sha256=config_sha256(cfg.raw) if cfg is not None else None)


def artifact_facts(plan: Plan) -> ArtifactFacts:
    """Read every local artifact the plan names (raises PlanError for missing or unreadable files)."""
    target = model_facts(plan.target, "target")
    assert target is not None
    return ArtifactFacts(target=target, drafter=model_facts(plan.drafter, "drafter"))
