"""vLLM (V1, 0.8–0.33): names, and the traps that change numbers (docs/operations/engines.md, "What the exporter reads").

- `vllm:cache_config_info` is an info gauge; the pool is in its labels: prefer
  `kv_cache_size_tokens` (per engine), else `num_gpu_blocks` × `block_size`. `"None"` is
  unknown. Under data parallelism `num_gpu_blocks` is the SUM over engines and is put on every
  `engine` series: divide by the number of engines seen and say so in `version_hints`.
- `kv_cache_usage_perc` (>= 0.9.2) replaced `gpu_cache_usage_perc`.
- The context cap is not in `/metrics`: `max_model_len` comes from `GET /v1/models`.
- Streams are keyed by (`model_name`, `engine`); `cache_config_info` carries no model and
  belongs to every stream with the same `engine` label.
- Ray Serve LLM re-exports these families as `ray_vllm_<base>` (vLLM 0.32
  `vllm/v1/metrics/ray_wrappers.py`: `_get_sanitized_opentelemetry_name` turns `:` into `_`, every
  series gets the tag `ReplicaId`; Ray 2.60.0 `ray/_private/telemetry/open_telemetry_metric_recorder.py`
  prefixes `ray_`). Each Serve replica is its own vLLM engine (own counters, pool, restarts), so the
  replica is part of the rank: `<ReplicaId>/<engine>` (`WorkerId`, the replica's worker process, when
  `ReplicaId` is empty outside Serve). Ray's other labels (`Version`, `SessionName`, `NodeAddress`,
  `Component`, ...) are one value per process: they split nothing and are folded away. Older Ray (before its
  OpenTelemetry recorder, ray-project/ray#52719) kept vLLM's colon: `ray_vllm:<base>`, the spelling Datadog's
  integration reads too (DataDog/integrations-core#25213); both spellings are read, the same families.

This package: the adapter here (k is the base rule, one per-position series per draft position);
`schedule.py`, the `num_speculative_tokens_per_batch_size` reader behind the `told_schedule`
hook (`--speculative-config`: vLLM serves its speculative config on no HTTP endpoint outside dev mode, so the
exporter knows a schedule only when told); `stream.py`, the per-request acceptance of `--per-request-spec-decode-metrics`
behind `carries_acceptance` / `request_acceptance`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import is_, itemgetter
from typing import TYPE_CHECKING, Final, NamedTuple

from exporter.engines.base import (
    MAX_POSITIONS,
    EngineAdapter,
    EngineSnapshot,
    GetJson,
    Histogram,
    ParsedPage,
    Sample,
    SideInfo,
    SpecCounters,
    StreamKey,
    StreamSnapshot,
)
from exporter.engines.common import (
    HistogramMemo,
    SeriesKeys,
    all_finite,
    as_int,
    dense,
    finite,
    fold,
    histograms,
    per_position,
    planned_values,
)
from exporter.engines.versions import VersionRange
from exporter.engines.vllm import stream
from exporter.engines.vllm.schedule import vllm_told_schedule

if TYPE_CHECKING:
    from exporter.engines import EngineKind  # the registry's typing spelling

KIND: Final = "vllm"
PREFIXES: tuple[str, ...] = ("vllm:", "vllm_", "ray_vllm_", "ray_vllm:")

CACHE_INFO = "cache_config_info"
USAGE_NEW = "kv_cache_usage_perc"
USAGE_OLD = "gpu_cache_usage_perc"
DRAFTS = "spec_decode_num_drafts_total"
DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"
ACCEPTED_POS = "spec_decode_num_accepted_tokens_per_pos_total"
TTFT = "time_to_first_token_seconds"
TPOT = "request_time_per_output_token_seconds"
ITL = "inter_token_latency_seconds"
ITL_OLD = "time_per_output_token_seconds"  # the ITL histogram's name until vLLM 0.13
PROMPT = "prompt_tokens_total"
GENERATION = "generation_tokens_total"
RUNNING = "num_requests_running"
WAITING = "num_requests_waiting"
PREEMPTIONS = "num_preemptions_total"

FAMILIES = frozenset({
    CACHE_INFO, USAGE_NEW, USAGE_OLD, DRAFTS, DRAFT_TOKENS, ACCEPTED, ACCEPTED_POS,
    TTFT + "_bucket", TTFT + "_count", TTFT + "_sum",
    *(h + s for h in (TPOT, ITL, ITL_OLD) for s in ("_bucket", "_count", "_sum")), PROMPT, GENERATION, RUNNING, WAITING, PREEMPTIONS,
})


_LABELS = itemgetter(0)
_NO_SIDE = SideInfo()
_NO_ROWS: list[Sample] = []
# the families `snapshot` reads sample by sample (the histograms have their own plans), in `_Recipe` order
_READ_BASES = (USAGE_NEW, USAGE_OLD, RUNNING, WAITING, DRAFTS, DRAFT_TOKENS, ACCEPTED, PROMPT, GENERATION, PREEMPTIONS,
               ACCEPTED_POS, CACHE_INFO)
_READ = tuple(f"{KIND}:{base}" for base in _READ_BASES)
_NAME = dict(zip(_READ_BASES, _READ, strict=True))
_INDEX = {base: i for i, base in enumerate(_READ_BASES)}
_POS = _INDEX[ACCEPTED_POS]
# a stream's values after its usage ratio, in `_stream`'s order (its per-position counts follow)
_FIELDS = tuple(_INDEX[base] for base in (RUNNING, WAITING, PROMPT, GENERATION, PREEMPTIONS, DRAFTS, DRAFT_TOKENS,
                                          ACCEPTED))


_Pick = Callable[[list[float | None]], tuple[float | None, ...]]


class _Recipe(NamedTuple):
    """What a page read in full (`VllmAdapter._in_full`) gives a page with the same series: its `_READ`
    families' label mappings (the parser's own objects, compared by identity) and row counts, its TTFT
    streams, its hints and dropped positions, and per stream (in output order) its key, pool, whether it
    speculates, the picker of its values out of the families' values and its number of positions."""

    labels: list[Mapping[str, str]]
    lengths: tuple[int, ...]
    ttft_keys: frozenset[StreamKey]
    hints: tuple[str, ...]
    beyond: int
    streams: list[tuple[StreamKey, tuple[int | None, int | None], bool, _Pick, int]]


def _stream(key: StreamKey, pool: tuple[int | None, int | None], side: SideInfo, spec: bool,
            values: tuple[float | None, ...], depth: int, ttft: Mapping[StreamKey, Histogram],
            tpot: Mapping[StreamKey, Histogram], itl: Mapping[StreamKey, Histogram]) -> StreamSnapshot:
    """One stream from its values: usage, running, waiting, prompt, generation, preemptions, drafts, draft
    tokens, accepted tokens, then `depth` per-position counts (a position the page lacks reads 0)."""
    model, rank = key
    usage, running, waiting, prompt, generation, preemptions, drafts, draft_tokens, accepted = values[:9]
    return StreamSnapshot(
        model=model, rank=rank, kv_pool_tokens=pool[0], kv_block_size=pool[1], kv_usage_ratio=usage,
        context_cap_tokens=side.max_model_len.get(model) if model is not None else None,
        spec=SpecCounters(drafts=drafts, draft_tokens=draft_tokens, accepted_tokens=accepted,
                          accepted_per_position=tuple([0.0 + v for v in values[9:]]) if depth else ())  # type: ignore[operator]
        if spec else None,
        ttft=ttft.get(key), tpot=tpot.get(key), itl=itl.get(key), prompt_tokens=prompt,
        generation_tokens=generation, requests_running=running, requests_waiting=waiting, preemptions=preemptions,
    )


def _engine_snapshot(page: ParsedPage, timestamp: float, side: SideInfo, streams: tuple[StreamSnapshot, ...],
                     hints: tuple[str, ...], beyond: int) -> EngineSnapshot:
    start = page.get("process_start_time_seconds", _NO_ROWS)
    return EngineSnapshot(
        engine=KIND, timestamp=timestamp, streams=streams,
        process_start_time=finite(start[0][1]) if start else None,
        version=side.version, version_hints=hints,
        anomalies={"position_limit": beyond} if beyond else {},
    )


def _replica(labels: Mapping[str, str]) -> str | None:
    """Ray Serve's replica of a `ray_vllm_` / `ray_vllm:` series (`ReplicaId`, else its `WorkerId`); None on vLLM's own page."""
    return labels.get("ReplicaId") or labels.get("WorkerId") or None


def _rank(labels: Mapping[str, str]) -> str | None:
    """vLLM's `engine` label, qualified by the Ray Serve replica when there is one: `<replica>/<engine>`."""
    engine, replica = labels.get("engine"), _replica(labels)
    if replica is None:
        return engine
    return replica if engine is None else f"{replica}/{engine}"


def _key(labels: Mapping[str, str]) -> StreamKey:
    return StreamKey(labels.get("model_name"), _rank(labels))


class VllmAdapter(EngineAdapter):
    """Normalises a vLLM page into streams keyed by (model_name, engine)."""

    kind: EngineKind = KIND
    prefixes = PREFIXES
    families = FAMILIES
    tested_versions = VersionRange((0, 8), (0, 33), "0.8–0.33",
                                   "vLLM 0.32 CPU captures and the names of docs/operations/engines.md")
    shapes = {ACCEPTED_POS: frozenset({"position"})}  # exporter.engines.versions.conforming
    schedule_setting = "speculative_config"  # vLLM's --speculative-config JSON
    told_schedule = staticmethod(vllm_told_schedule)
    acceptance_source = "vLLM's metrics"  # --per-request-spec-decode-metrics: on the final usage chunk
    carries_acceptance = staticmethod(stream.carries_acceptance)
    request_acceptance = staticmethod(stream.streamed_acceptance)

    def __init__(self) -> None:
        self._histograms: HistogramMemo[StreamKey] = HistogramMemo()  # common.histograms
        self._keys = SeriesKeys(_key)
        # the last page's cache_config_info label mappings (the parser's own, the same objects while the
        # series are the same), the pools read from them and the hints that reading gave
        self._pools_memo: tuple[list[Mapping[str, str]], dict[str | None, tuple[int | None, int | None]],
                                list[str]] | None = None
        self._recipe: _Recipe | None = None  # how the last page read in full became its streams

    def side_info(self, get_json: GetJson) -> SideInfo:
        """`max_model_len` per served model from `GET /v1/models` (the context cap is not in `/metrics`),
        the version from `GET /version`."""
        models = get_json("/v1/models", v1=True) or {}
        lens = {}
        data = models.get("data")
        for m in data if isinstance(data, list) else []:
            if isinstance(m, dict) and isinstance(m.get("max_model_len"), int):
                lens[str(m.get("id"))] = m["max_model_len"]
        ver = (get_json("/version") or {}).get("version")
        return SideInfo(max_model_len=lens, version=ver if isinstance(ver, str) else None)

    def side_incomplete(self, side: SideInfo) -> bool:
        """No context cap: `/v1/models` failed (or served nothing yet)."""
        return not side.max_model_len

    def snapshot(self, page: ParsedPage, timestamp: float, side: SideInfo | None = None) -> EngineSnapshot:
        side = side or _NO_SIDE
        ttft: dict[StreamKey, Histogram] = histograms(page, f"{KIND}:{TTFT}", self._keys, self._histograms)
        tpot: dict[StreamKey, Histogram] = histograms(page, f"{KIND}:{TPOT}", self._keys, self._histograms)
        itl: dict[StreamKey, Histogram] = histograms(page, f"{KIND}:{ITL}", self._keys, self._histograms) or \
            histograms(page, f"{KIND}:{ITL_OLD}", self._keys, self._histograms)
        read = [page.get(name, _NO_ROWS) for name in _READ]
        recipe = self._recipe
        if recipe is not None:
            snap = self._by_recipe(recipe, page, read, timestamp, side, ttft, tpot, itl)
            if snap is not None:
                return snap
        snap, self._recipe = self._in_full(page, read, timestamp, side, ttft, tpot, itl)
        return snap

    def _in_full(self, page: ParsedPage, read: list[list[Sample]], timestamp: float, side: SideInfo,
                 ttft: dict[StreamKey, Histogram], tpot: dict[StreamKey, Histogram],
                 itl: dict[StreamKey, Histogram]) -> tuple[EngineSnapshot, _Recipe | None]:
        """The page normalised from its samples, and its `_Recipe` (None when the page has none)."""
        hints: list[str] = []
        key_of = self._keys.key
        rows = dict(zip(_READ, read, strict=True))
        g = {base: fold(rows[_NAME[base]], key_of, "max") for base in (USAGE_NEW, USAGE_OLD, RUNNING, WAITING)}
        c = {base: fold(rows[_NAME[base]], key_of, "sum")
             for base in (DRAFTS, DRAFT_TOKENS, ACCEPTED, PROMPT, GENERATION, PREEMPTIONS)}
        usage = g[USAGE_NEW]
        if usage:
            hints.append("vllm>=0.9.2: kv_cache_usage_perc")
        elif g[USAGE_OLD]:
            usage = g[USAGE_OLD]
            hints.append("vllm<0.9.2: gpu_cache_usage_perc")
        per_pos: dict[StreamKey, dict[int, float]] = {}
        # positions past MAX_POSITIONS (or negative): dropped, counted as position_limit
        beyond = per_position(rows[_NAME[ACCEPTED_POS]], "position", key_of, per_pos)

        keys: set[StreamKey] = set()
        for folded in (*g.values(), *c.values()):
            keys |= set(folded)
        keys |= set(per_pos) | set(ttft)

        pools = self._pools_of(rows[_NAME[CACHE_INFO]], hints)
        for rank in pools:
            if not any(k[1] == rank for k in keys):
                keys.add(StreamKey(None, rank))  # a page with only cache_config_info: its own stream

        streams = []
        ordered = sorted(keys, key=lambda k: (k[0] or "", k[1] or ""))
        for key in ordered:
            pos = dense(per_pos.get(key, {}))
            streams.append(_stream(
                key, pools.get(key[1], (None, None)), side,
                key in c[DRAFTS] or key in c[ACCEPTED] or key in per_pos,
                (usage.get(key), g[RUNNING].get(key), g[WAITING].get(key), c[PROMPT].get(key),
                 c[GENERATION].get(key), c[PREEMPTIONS].get(key), c[DRAFTS].get(key), c[DRAFT_TOKENS].get(key),
                 c[ACCEPTED].get(key), *pos),
                len(pos), ttft, tpot, itl))
        snap = _engine_snapshot(page, timestamp, side, tuple(streams), tuple(hints), beyond)
        return snap, self._recipe_of(read, ordered, pools, bool(g[USAGE_NEW]), frozenset(ttft), tuple(hints),
                                     beyond, snap)

    def _recipe_of(self, read: list[list[Sample]], ordered: list[StreamKey],
                   pools: dict[str | None, tuple[int | None, int | None]], new_usage: bool,
                   ttft_keys: frozenset[StreamKey], hints: tuple[str, ...], beyond: int,
                   snap: EngineSnapshot) -> _Recipe | None:
        """Where each stream's values were on a page just read in full, when each one is a single sample's
        value (every sample finite, one series per stream and family, per position): `_by_recipe` then
        reads a page with the same series by position. None otherwise (such a page is read in full each time)."""
        flat = [row for rows in read for row in rows]
        if not all_finite([v for _, v in flat]):  # a NaN or ±Inf: such a page is read in full each time
            return None
        key_of = self._keys.key
        at: dict[tuple[int, StreamKey] | tuple[int, StreamKey, int], int] = {}
        n = 0
        for f, rows in enumerate(read):
            for labels, _ in rows:
                k = key_of(labels)
                if f == _POS:  # one series per stream and position: `per_position` adds nothing up
                    pos = as_int(labels.get("position"))
                    if pos is not None and 0 <= pos < MAX_POSITIONS:
                        if (f, k, pos) in at:
                            return None
                        at[(f, k, pos)] = n
                elif (f, k) in at:
                    return None
                else:
                    at[(f, k)] = n
                n += 1
        none, zero = n, n + 1
        usage_f = _INDEX[USAGE_NEW] if new_usage else _INDEX[USAGE_OLD]
        plans: list[tuple[StreamKey, tuple[int | None, int | None], bool, _Pick, int]] = []
        for key, s in zip(ordered, snap.streams, strict=True):
            depth = len(s.spec.accepted_per_position) if s.spec is not None else 0
            idx = [at.get((f, key), none) for f in (usage_f, *_FIELDS)]
            idx += [at.get((_POS, key, p), zero) for p in range(depth)]
            plans.append((key, pools.get(key[1], (None, None)), s.spec is not None, itemgetter(*idx), depth))
        return _Recipe([row[0] for row in flat], tuple(map(len, read)), ttft_keys, hints, beyond, plans)

    def _by_recipe(self, recipe: _Recipe, page: ParsedPage, read: list[list[Sample]], timestamp: float,
                   side: SideInfo, ttft: dict[StreamKey, Histogram], tpot: dict[StreamKey, Histogram],
                   itl: dict[StreamKey, Histogram]) -> EngineSnapshot | None:
        """The snapshot `_in_full` makes of `page`, when its series are the recipe's page's (the same label
        mappings, by identity, in the same families and order) and every value is finite; else None."""
        if tuple(map(len, read)) != recipe.lengths or ttft.keys() != recipe.ttft_keys:
            return None
        got = planned_values(recipe.labels, [row for rows in read for row in rows])
        if got is None:
            return None
        values: list[float | None] = got  # type: ignore[assignment]  # and past the last value: None, 0.0
        values += (None, 0.0)
        streams = tuple(_stream(key, pool, side, spec, pick(values), depth, ttft, tpot, itl)
                        for key, pool, spec, pick, depth in recipe.streams)
        return _engine_snapshot(page, timestamp, side, streams, recipe.hints, recipe.beyond)

    def _pools_of(self, infos: list[Sample], hints: list[str]) -> dict[str | None, tuple[int | None, int | None]]:
        """`_pools`, read again only when the info series are not the last page's label mappings (by
        identity: the parser hands out one mapping per label text): the pool is in the labels alone, not
        in the value. The result is only read by `snapshot`."""
        memo = self._pools_memo
        if memo is not None and len(memo[0]) == len(infos) and all(map(is_, memo[0], map(_LABELS, infos))):
            hints.extend(h for h in memo[2] if h not in hints)
            return memo[1]
        before = len(hints)
        pools = self._pools(infos, hints)
        self._pools_memo = ([labels for labels, _ in infos], pools, hints[before:])
        return pools

    @staticmethod
    def _pools(infos: list[Sample], hints: list[str]) -> dict[str | None, tuple[int | None, int | None]]:
        """Allocated pool per `engine` label from cache_config_info: (tokens, block size)."""
        engines_of: dict[str | None, set[str | None]] = {}  # the engines (DP ranks) of each Ray replica
        for labels, _ in infos:
            engines_of.setdefault(_replica(labels), set()).add(labels.get("engine"))
        out: dict[str | None, tuple[int | None, int | None]] = {}
        for labels, _ in infos:
            rank = _rank(labels)
            engines = engines_of[_replica(labels)]
            block = as_int(labels.get("block_size"))
            tokens = as_int(labels.get("kv_cache_size_tokens"))
            if tokens is None:
                blocks = as_int(labels.get("num_gpu_blocks"))
                if blocks is not None and block is not None:
                    if len(engines) > 1:
                        hint = (f"DP: num_gpu_blocks is the sum over {len(engines)} engines; "
                                f"divided by {len(engines)} (no kv_cache_size_tokens)")
                        if hint not in hints:
                            hints.append(hint)
                        blocks //= len(engines)
                    tokens = blocks * block
                elif labels.get("num_gpu_blocks") == "None":
                    hint = 'num_gpu_blocks="None": allocated pool unknown'
                    if hint not in hints:
                        hints.append(hint)
            out[rank] = (tokens, block)
        return out
