"""Is this evidence about the plan's deployment? Model, engine kind and speculative settings.

Why: captures of another model or another method judged against the plan say nothing about
it, and a drafter config of one family deployed under another method's name is a different
deployment. So evidence is matched to the plan before any line reads it:

- the model the engine serves (`engine.served_model_name`, default `target.name`) against the
  `model_name` labels of its streams (vLLM and SGLang both label by the served name);
- the engine kind (detected from the page's families) against `engine.kind`;
- where the engine tells, the speculative settings: SGLang's `/server_info` names the
  algorithm (`speculative_algorithm`: EAGLE, EAGLE3, NGRAM, STANDALONE, …; which names run which
  method is the engine profile's `algorithms`); vLLM shows only whether speculation is on (its
  spec counters exist) and its depth (one per-position counter per draft position).

A mismatch makes the evidence inconclusive with the reason (an `Implausible` of kind
"mismatch"). The drafter's detected family must match the declared method (a co-design fail),
and an engine older than a method's general availability (the profile's `general_availability`) is
a warning (seed 002: DSpark, DFlash and MTP became generally available in SGLang 0.5.18; earlier
versions may still run them, as seed 000's NEXTN did on SGLang).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gate.model.engines import profile
from gate.model.plausibility import Implausible

# Drafter families (gate.model.config.drafter_family) each plan method may deploy.
METHOD_FAMILIES: dict[str, frozenset[str]] = {
    "draft_model": frozenset({"draft_model"}),
    "eagle": frozenset({"eagle3", "draft_model"}),  # EAGLE-1/2 heads have no marker of their own in config.json
    "eagle3": frozenset({"eagle3"}),
    "mtp": frozenset({"mtp"}),
    "nextn": frozenset({"mtp"}),
    "dflash": frozenset({"dflash"}),
    "dspark": frozenset({"dspark"}),
}

@dataclass(frozen=True)
class EvidenceIdentity:
    """What one evidence source says about the deployment it came from (None: it does not say)."""

    source: str
    engine: str | None = None
    models: tuple[str, ...] = ()
    speculating: bool | None = None
    depth: int | None = None  # vLLM: per-position counters seen; SGLang: spec_num_draft_tokens − 1
    algorithm: str | None = None  # SGLang /server_info speculative_algorithm
    version: str | None = None


def _names(name: str) -> set[str]:
    """A served name and its last path component (`<models>/target` is served as `target` by some launchers)."""
    return {name, name.rstrip("/").rsplit("/", 1)[-1]}


def match(ident: EvidenceIdentity, *, served_model_name: str | None, engine: str, method: str | None,
          k: int | None) -> Implausible | None:
    """The first mismatch between the evidence and the plan, or None when nothing contradicts it."""
    src = ident.source
    if ident.engine is not None and ident.engine != engine:
        return Implausible("mismatch", f"{src} is a {ident.engine} engine, the plan deploys {engine}",
                           {})
    models = [m for m in ident.models if m]
    if served_model_name and models:
        expected = _names(served_model_name)
        foreign = sorted(m for m in models if not (_names(m) & expected))
        if foreign:
            return Implausible("mismatch", f"{src} serves {', '.join(foreign)}, not the plan's {served_model_name} "
                               "(engine.served_model_name, default target.name)", {})
    if method is None:
        if ident.speculating:
            return Implausible("mismatch", f"{src} runs speculative decoding; the plan has none", {})
        return None
    if ident.speculating is False:
        return Implausible("mismatch", f"{src} runs no speculative decoding; the plan deploys {method}", {})
    if ident.algorithm:
        reporter = profile(ident.engine or engine)
        allowed = reporter.algorithms(method)
        if allowed is not None and ident.algorithm.upper() not in allowed:
            return Implausible("mismatch", f"{src} runs speculative algorithm {ident.algorithm}, the plan deploys "
                               f"{method} ({' or '.join(sorted(allowed))} in {reporter.name})", {})
    if ident.depth is not None and k is not None and ident.depth != k and method != "ngram":
        return Implausible("mismatch", f"{src} drafts {ident.depth} positions per round, the plan declares k = {k}",
                           {"depth": float(ident.depth), "k": float(k)})
    if ident.depth is not None and k is not None and method == "ngram" and ident.depth > k:
        return Implausible("mismatch", f"{src} reports {ident.depth} draft positions, more than the plan's k = {k}",
                           {"depth": float(ident.depth), "k": float(k)})
    return None


def family_mismatch(family: str, method: str) -> str | None:
    """Why a drafter of `family` cannot be the plan's `method` (None when it can)."""
    allowed = METHOD_FAMILIES.get(method)
    if allowed is None or family in allowed:
        return None
    return (f"the drafter config is a {family} drafter, but engine.speculative.method is {method} "
            f"(expects {' or '.join(sorted(allowed))})")


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """`0.5.18`, `v0.5.18rc1`, `0.5.18.post2` → (0, 5, 18); None when there is no version number."""
    if not text:
        return None
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        return None
    return tuple(int(x) for x in m.groups() if x is not None)


def before_general_availability(engine: str, method: str | None, version: str | None) -> str | None:
    """A warning when the engine version predates the method's general availability (seed 002)."""
    if method is None:
        return None
    ga = profile(engine).general_availability(method)
    v = parse_version(version)
    if ga is None or v is None:
        return None
    if v < ga:
        ga_txt = ".".join(str(x) for x in ga)
        return (f"{engine} {version} predates {method}'s general availability in {engine} {ga_txt} (seed 002); "
                "earlier versions may still run it (seed 000's NEXTN did)")
    return None
