"""Exporter configuration: a pydantic model read from the environment (prefix `SPECGATE_`) with matching CLI flags.

Flags override the environment; the environment overrides defaults. The engine API key is
read from `SPECGATE_ENGINE_API_KEY` only (never a flag: it would show in `ps`). Not pydantic-settings: it
imports asyncio and with it ssl, which every sidecar then held for reading a few variables (issue 40's soak).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from exporter.card import Card, read_card
from exporter.engines import ADAPTERS, ENGINE_KINDS, EngineKind
from exporter.engines.base import EngineAdapter
from exporter.schedule import DepthSchedule
from exporter.scrape import ScrapeError, read_page_file

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str | float | int) -> float:
    """'30s', '1m', '1.5h', '250ms' or a plain number of seconds."""
    if isinstance(text, int | float):
        return float(text)
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 1m, 5m)")
    return float(m.group(1)) * _UNIT[m.group(2)]


def duration_label(seconds: float) -> str:
    """The `window` label value: 60 -> '1m', 90 -> '90s', 3600 -> '1h'."""
    s = int(seconds) if float(seconds).is_integer() else seconds
    if isinstance(s, int) and s % 3600 == 0 and s:
        return f"{s // 3600}h"
    if isinstance(s, int) and s % 60 == 0 and s:
        return f"{s // 60}m"
    return f"{s}s"


ENV_PREFIX = "SPECGATE_"


class ExporterSettings(BaseModel):
    """Everything the sidecar needs; see README "Configuration".

    Read as pydantic-settings read it before: `SPECGATE_<NAME>` in any case, the value as a string for pydantic to
    convert, under the values given (flags) and over the defaults, which are validated too."""

    model_config = ConfigDict(extra="ignore", validate_default=True)

    engine_url: str = Field("http://127.0.0.1:8000", description="engine base URL (or its /metrics URL)")
    engine: Literal["auto"] | EngineKind = Field("auto", description="engine kind; auto detects from prefixes")
    engine_api_key: SecretStr | None = Field(None, description="bearer token sent to the engine's /v1/* endpoints")
    listen: str = Field("127.0.0.1:9479", description="HOST:PORT to serve /metrics and /healthz on")
    scrape_interval: float = Field(5.0, gt=0, description="seconds between engine scrapes")
    scrape_timeout: float = Field(4.0, gt=0, description="connect/read timeout of one scrape, seconds")
    max_page_bytes: int = Field(16 * 1024 * 1024, gt=0, description="refuse engine pages larger than this")
    windows: list[float] = Field(default_factory=lambda: [60.0, 300.0],
                                 description="sliding windows for the windowed gauges, e.g. 1m,5m")
    batch_window: float = Field(30.0, gt=0, description="length of one per-batch SLO window, seconds")
    min_drafts: int = Field(10, ge=1, description="a window with fewer drafts has no acceptance value")
    acceptance_slo_target: float | None = Field(None, gt=1, description="target accepted tokens per verify (L)")
    workload_demand_tokens: int | None = Field(None, ge=0, description="resident tokens of the request mix")
    kv_pool_configured_tokens: int | None = Field(None, ge=0, description="configured KV ceiling, if known")
    history: int = Field(1000, ge=1, description="completed batch windows kept for /api/v1/windows")
    max_streams: int = Field(256, ge=1, description="streams tracked at most; newer ones are dropped and counted")
    stream_ttl: float = Field(600.0, gt=0, description="a stream unseen this long is forgotten, seconds")
    position_gauges: bool = Field(True, description="expose the per-position windowed gauges (k x windows series "
                                                    "per stream); false at fleet scale, the per-position counters stay")
    speculative_config: str | None = Field(
        None, description="the engine's vLLM --speculative-config JSON, as given to vLLM (its "
                          "num_speculative_tokens_per_batch_size schedule gives specgate_spec_depth_scheduled)")
    speculative_adaptive_config: str | None = Field(
        None, description="the engine's SGLang --speculative-adaptive-config FILE, or 'default' for SGLang's "
                          "built-in tiers (gives specgate_spec_depth_scheduled)")
    acceptance_card: str | None = Field(
        None, description="the drafter's acceptance card as JSON, the plan's evidence.reported.acceptance_card "
                          "(its row: default overall); gives specgate_spec_card_* beside live acceptance")

    @model_validator(mode="before")
    @classmethod
    def _environment(cls, given: object) -> object:
        """`SPECGATE_<NAME>` variables under the values given."""
        if not isinstance(given, dict):
            return given
        names = cls.model_fields
        env = {k.lower().removeprefix(ENV_PREFIX.lower()): v for k, v in os.environ.items()
               if k.upper().startswith(ENV_PREFIX)}
        return {**{k: v for k, v in env.items() if k in names}, **given}

    @field_validator("windows", mode="before")
    @classmethod
    def _windows(cls, v: object) -> object:
        if isinstance(v, str):
            v = [x for x in v.split(",") if x.strip()]
        if isinstance(v, list | tuple):
            return [parse_duration(x) for x in v]
        return v

    @field_validator("windows")
    @classmethod
    def _windows_positive(cls, v: list[float]) -> list[float]:
        if any(x <= 0 for x in v):
            raise ValueError("every window must be longer than 0s")
        return list(dict.fromkeys(v))  # 60s,1m is one window (one series), not two with the same label

    @field_validator("listen")
    @classmethod
    def _listen(cls, v: str) -> str:
        _, sep, port = v.rpartition(":")
        if not sep or not port.isdigit() or int(port) > 65535:
            raise ValueError(f"expected HOST:PORT, got {v!r}")
        return v

    @field_validator("scrape_interval", "scrape_timeout", "batch_window", "stream_ttl", mode="before")
    @classmethod
    def _duration(cls, v: object) -> object:
        return parse_duration(v) if isinstance(v, str) else v

    def listen_address(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return (host.strip("[]") or "127.0.0.1", int(port))


_FLAGS: list[tuple[str, dict[str, Any]]] = [
    ("engine_url", {"metavar": "URL"}),
    ("engine", {"choices": ["auto", *ENGINE_KINDS]}),
    ("listen", {"metavar": "HOST:PORT"}),
    ("scrape_interval", {"metavar": "DURATION"}),
    ("scrape_timeout", {"metavar": "DURATION"}),
    ("max_page_bytes", {"type": int, "metavar": "BYTES"}),
    ("windows", {"metavar": "LIST"}),
    ("batch_window", {"metavar": "DURATION"}),
    ("min_drafts", {"type": int, "metavar": "N"}),
    ("acceptance_slo_target", {"type": float, "metavar": "L"}),
    ("workload_demand_tokens", {"type": int, "metavar": "TOKENS"}),
    ("kv_pool_configured_tokens", {"type": int, "metavar": "TOKENS"}),
    ("history", {"type": int, "metavar": "N"}),
    ("max_streams", {"type": int, "metavar": "N"}),
    ("stream_ttl", {"metavar": "DURATION"}),
    ("position_gauges", {"choices": ["true", "false"]}),
    ("speculative_config", {"metavar": "JSON"}),
    ("speculative_adaptive_config", {"metavar": "FILE"}),
    ("acceptance_card", {"metavar": "JSON"}),
]


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting; each also reads SPECGATE_<NAME> from the environment."""
    for name, extra in _FLAGS:
        f = ExporterSettings.model_fields[name]
        default = f.get_default(call_default_factory=True)
        if isinstance(default, list):
            default = ",".join(duration_label(x) for x in default)
        elif isinstance(default, bool):
            default = str(default).lower()  # the flag's own spelling: true | false
        said = "unset" if default is None else f"default {default}"
        parser.add_argument("--" + name.replace("_", "-"), default=None,
                            help=f"{f.description} (env SPECGATE_{name.upper()}; {said})", **extra)


def settings_from_args(args: argparse.Namespace) -> ExporterSettings:
    """Settings from flags over the environment; a bad value raises ValueError with one line naming it."""
    overrides = {name: getattr(args, name) for name, _ in _FLAGS if getattr(args, name, None) is not None}
    try:
        settings = ExporterSettings(**overrides)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            name = str(err["loc"][0]) if err["loc"] else "?"
            msg = str(err["msg"]).removeprefix("Value error, ")
            problems.append(f"--{name.replace('_', '-')} / SPECGATE_{name.upper()}: {msg}")
        raise ValueError("invalid setting: " + "; ".join(problems)) from None
    told_schedule(settings)  # a schedule that does not read is one line now, not a failure at the first scrape
    told_card(settings)  # likewise a card
    return settings


ADAPTIVE_DEFAULT = "default"  # --speculative-adaptive-config default: SGLang's DEFAULT_ADAPTIVE_CONFIG
CONFIG_BYTES = 1 << 20  # a speculative config file is a few hundred bytes


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')} / SPECGATE_{name.upper()}"


def _told_reader(setting: str) -> type[EngineAdapter]:
    """The adapter whose engine a schedule setting belongs to (its `schedule_setting`): it reads the schedule."""
    return next(cls for cls in ADAPTERS.values() if cls.schedule_setting == setting)


def told_schedule(settings: ExporterSettings) -> DepthSchedule | None:
    """The depth schedule the exporter was told, read as the engine reads it (by the adapter whose
    `schedule_setting` it is, `EngineAdapter.told_schedule`): vLLM's
    `--speculative-config` JSON (its `num_speculative_tokens_per_batch_size`; a config without one runs
    `num_speculative_tokens` at every batch: one band), or SGLang's `--speculative-adaptive-config` file
    (`default`: SGLang's built-in tiers). None when told neither. ValueError with one line naming the
    setting for JSON that does not parse, a file that cannot be read, or a schedule the engine would refuse."""
    cfg, path = settings.speculative_config, settings.speculative_adaptive_config
    if cfg is not None and path is not None:
        raise ValueError(f"invalid setting: give {_flag('speculative_config')} (vLLM) or "
                         f"{_flag('speculative_adaptive_config')} (SGLang), not both")
    try:
        if cfg is not None:
            name = "speculative_config"
            doc = json.loads(cfg)
            if not isinstance(doc, dict):
                raise ValueError(f"expected a JSON object, got {type(doc).__name__}")
            return _told_reader(name).told_schedule(doc)
        if path is not None:
            name = "speculative_adaptive_config"
            if path == ADAPTIVE_DEFAULT:
                return _told_reader(name).told_schedule(None)
            raw, _ = read_page_file(path, CONFIG_BYTES)
            doc = json.loads(raw)
            if not isinstance(doc, dict):
                raise ValueError(f"expected a JSON object, got {type(doc).__name__}")
            return _told_reader(name).told_schedule(doc)
    except ScrapeError as e:
        raise ValueError(f"invalid setting: {_flag(name)}: {e}") from None
    except (ValueError, RecursionError) as e:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"invalid setting: {_flag(name)}: {e}") from None
    return None


def told_card(settings: ExporterSettings) -> Card | None:
    """The acceptance card the exporter was told (`exporter.card.read_card`: its named row, converted), or None.
    ValueError with one line naming the setting for JSON that does not parse or a card that does not hold."""
    if settings.acceptance_card is None:
        return None
    try:
        doc = json.loads(settings.acceptance_card)
        if not isinstance(doc, dict):
            raise ValueError(f"expected a JSON object, got {type(doc).__name__}")
        return read_card(doc)
    except (ValueError, RecursionError) as e:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"invalid setting: {_flag('acceptance_card')}: {e}") from None
