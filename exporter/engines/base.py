"""The normalised, engine-independent snapshot every later layer consumes.

An engine adapter turns one parsed `/metrics` page (plus side information such as
vLLM's `/v1/models` or SGLang's `/server_info`) into an `EngineSnapshot`: cumulative
values exactly as the engine reported them. Windows and derivation (deltas, restarts,
rates) happen later, in `exporter.windows` / `exporter.derive`.

Missing inputs are `None` (absent), never 0.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from exporter.bounds import MAX_DEPTH, MAX_POOL_TOKENS
from exporter.schedule import DepthSchedule

if TYPE_CHECKING:
    from exporter.engines import EngineKind  # the registry's typing spelling
# Draft positions kept per stream (0..63): deeper ones are dropped and counted (`position_limit`); a page
# carrying position="3000000" would otherwise make 3,000,001 per-position series. One position per draft depth.
MAX_POSITIONS = MAX_DEPTH

# A parsed page (`exporter.parse.parse_page`): sample name to its samples. An engine family's key is
# "<kind>:<base>" whichever spelling the page used (`vllm:` or `vllm_`), e.g.
# "vllm:spec_decode_num_drafts_total", "sglang:time_to_first_token_seconds_bucket"; an unprefixed
# family keeps its own name ("process_start_time_seconds"). Adapters' `families` are the base names.
Sample = tuple[Mapping[str, str], float]
ParsedPage = Mapping[str, list[Sample]]


class StreamKey(NamedTuple):
    """What identifies a stream within one engine: (model, rank). A tuple, so `("m", "0")` finds it too."""

    model: str | None
    rank: str | None


@dataclass(frozen=True, slots=True)
class Histogram:
    """A cumulative histogram as exposed: bucket bounds `les` (sorted) and their cumulative `counts`.

    Boundaries are read from the page (`le`), never hard-coded. `+Inf` is present only if
    the page had it. Bounds and counts are kept apart, not (le, count) pairs, because the bounds
    repeat on every scrape: an adapter hands out one shared `les` tuple per bucket layout, so the
    5-minute ring of a 32-stream engine holds each layout once (and two histograms with the same
    layout are recognised by identity, `a.les is b.les`, before anything is compared).
    The counts are one `array('d')` (8 bytes a count, not a float object of 24 plus its 8-byte slot): they
    change every scrape, and the ring holds ~60 pages of them (the 32-stream soak: ~2.6 MiB less). Any other
    sequence given is converted, so two histograms compare (and hash) by their values whatever built them.
    """

    les: tuple[float, ...]
    counts: Sequence[float]
    count: float | None = None
    sum: float | None = None

    def __post_init__(self) -> None:
        if type(self.counts) is not array or self.counts.typecode != "d":
            object.__setattr__(self, "counts", array("d", self.counts))

    def __hash__(self) -> int:
        return hash((self.les, tuple(self.counts), self.count, self.sum))

    @classmethod
    def of(cls, buckets: tuple[tuple[float, float], ...] | list[tuple[float, float]], count: float | None = None,
           sum: float | None = None) -> Histogram:  # noqa: A002  # the family's own word
        """From (le, cumulative count) pairs sorted by le."""
        return cls(tuple(le for le, _ in buckets), array("d", [c for _, c in buckets]), count, sum)

    @property
    def buckets(self) -> tuple[tuple[float, float], ...]:
        """(le, cumulative count) pairs, sorted by le."""
        return tuple(zip(self.les, self.counts, strict=True))


@dataclass(frozen=True, slots=True)
class SpecCounters:
    """Speculative-decoding inputs of one stream.

    vLLM: cumulative `drafts`, `draft_tokens`, `accepted_tokens`, `accepted_per_position`.
    SGLang >= 0.5.13: `verify_calls` (cumulative, one per draft round) with the stream's
    `generation_tokens`; `num_draft_tokens` from the gauge. Older SGLang: only the interval
    gauges `accept_length_gauge` (includes the bonus token) and `num_draft_tokens`.
    """

    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    accepted_per_position: tuple[float, ...] = ()
    verify_calls: float | None = None
    accept_length_gauge: float | None = None
    num_draft_tokens: float | None = None


@dataclass(frozen=True)
class DraftCounts:
    """vLLM-style counts (drafts, accepted and proposed draft tokens), cumulative or over a window, recovered from
    what an engine counted instead (`EngineAdapter.draft_counts`: SGLang's verify calls)."""

    drafts: float
    accepted_tokens: float | None
    draft_tokens: float | None


@dataclass(frozen=True, slots=True)
class StreamSnapshot:
    """One normalised stream: a (model, rank) pair of one engine at one instant.

    `rank` is vLLM's `engine` label (DP rank) or SGLang's `dp_rank`; None when the page has none.
    """

    model: str | None
    rank: str | None
    kv_pool_tokens: int | None = None
    kv_block_size: int | None = None
    kv_pool_configured_tokens: int | None = None
    kv_usage_ratio: float | None = None
    kv_used_tokens: float | None = None
    kv_available_tokens: float | None = None  # SGLang `kv_available_tokens`: free slots of the pool now
    # the engine's own memory bill in bytes (SGLang `kv_cache_memory_usage_gb` / `weight_memory_usage_gb`,
    # GiB: bytes / 2**30); the weights only when > 0 (SGLang reads 0 or less on CPU)
    kv_cache_memory_bytes: float | None = None
    weight_memory_bytes: float | None = None
    context_cap_tokens: int | None = None
    spec: SpecCounters | None = None
    ttft: Histogram | None = None
    # request TPOT ((last − first token) / (n − 1), one observation per request) and inter-token latency
    # (vLLM: one observation per engine step, so a speculative arm shows fewer, longer gaps)
    tpot: Histogram | None = None
    itl: Histogram | None = None
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    requests_running: float | None = None
    requests_waiting: float | None = None
    preemptions: float | None = None
    # cumulative values of the series folded into this stream by a label that only splits them (SGLang's
    # `pid`, `is_streaming`, ...), by "family{labels}": the restart rule compares them one by one, so one
    # process restarting behind a fold is a restart even when the folded sum still grew
    split_cumulative: tuple[tuple[str, float], ...] = ()
    # SGLang's interval gauges `spec_block_accept_length` / `spec_cap_length`, as the engine reports them
    spec_block_accept_length: float | None = None
    spec_cap_length: float | None = None
    # SGLang's current `spec_num_steps` / `spec_num_draft_tokens` gauges as reported (adaptive speculation
    # moves them; 0 before the first decode-log interval), on speculating streams only
    spec_num_steps: float | None = None
    spec_num_draft_tokens: float | None = None
    # SGLang `num_requests_total`: finished requests (cumulative), what takes the prefill token out of L
    finished_requests: float | None = None

    @property
    def key(self) -> StreamKey:
        return StreamKey(self.model, self.rank)

    @property
    def cumulative(self) -> Mapping[str, float | None]:
        """Every cumulative value of the stream by name, for restart detection (compared name by name, so
        a family that appears or disappears between two pages is never compared with a different one).
        Computed when asked, not kept: cached, it held ~6 MiB more in the 5-minute ring of the 32-stream soak."""
        vals: dict[str, float | None] = {"prompt": self.prompt_tokens, "generation": self.generation_tokens,
                                         "preemptions": self.preemptions, "finished_requests": self.finished_requests}
        if self.spec is not None:
            vals |= {"drafts": self.spec.drafts, "draft_tokens": self.spec.draft_tokens,
                     "accepted": self.spec.accepted_tokens, "verify_calls": self.spec.verify_calls}
            vals |= {f"accepted_pos{i}": v for i, v in enumerate(self.spec.accepted_per_position)}
        if self.ttft is not None:
            vals |= {"ttft_count": self.ttft.count, "ttft_sum": self.ttft.sum}
            vals |= {f"ttft_le{le!r}": c for le, c in zip(self.ttft.les, self.ttft.counts, strict=True)}
        vals |= {f"split:{name}": v for name, v in self.split_cumulative}
        return vals


@dataclass(frozen=True)
class SpeculativeSettings:
    """The engine's speculative settings as it reports them (SGLang `/server_info`: `speculative_algorithm`,
    `speculative_num_draft_tokens`, `speculative_num_steps`) and its own running average acceptance length
    since start (`avg_spec_accept_length`; not windowed: the exporter's L comes from the counters)."""

    algorithm: str | None = None
    num_draft_tokens: int | None = None
    num_steps: int | None = None
    avg_accept_length: float | None = None
    eagle_topk: int | None = None  # `speculative_eagle_topk`: k = num_steps only for a top-k 1 chain
    adaptive: bool | None = None  # `speculative_adaptive`: steps move at run time within the tiers' candidates
    adaptive_config: str | None = None  # `speculative_adaptive_config`: the tiers' file (None: SGLang's default)


@dataclass(frozen=True)
class EngineSnapshot:
    """Everything one scrape learned about one engine.

    `timestamp` is when the page was fetched (seconds since the epoch); `process_start_time`
    is the engine's `process_start_time_seconds` when exposed (restart detection).
    `version_hints` are human-readable notes on what the page revealed ("vllm>=0.9.2:
    kv_cache_usage_perc", "DP: num_gpu_blocks divided by 2 engines").
    """

    engine: EngineKind
    timestamp: float
    streams: tuple[StreamSnapshot, ...]
    process_start_time: float | None = None
    version: str | None = None
    version_hints: tuple[str, ...] = ()
    # what reading this page left out or could not trust, by reason (exporter.sanity.ANOMALY_REASONS)
    anomalies: Mapping[str, int] = field(default_factory=dict)
    speculative: SpeculativeSettings | None = None  # SGLang /server_info; None when the engine does not say

    def stream(self, model: str | None, rank: str | None) -> StreamSnapshot | None:
        return self._by_key.get((model, rank))

    @cached_property
    def _by_key(self) -> dict[tuple[str | None, str | None], StreamSnapshot]:
        """Streams by (model, rank): windows look every stream of one snapshot up in another."""
        out: dict[tuple[str | None, str | None], StreamSnapshot] = {}
        for s in self.streams:
            out.setdefault((s.model, s.rank), s)  # the first, as the linear search found it
        return out


@dataclass(frozen=True)
class SideInfo:
    """Facts that are not in `/metrics` and come from the engine's other endpoints.

    vLLM: `max_model_len` per served model from `GET /v1/models`, version from `GET /version`.
    SGLang (< 0.5.6 / < 0.5.12): `max_total_num_tokens`, `context_length`, `max_total_tokens`
    (the configured ceiling) from `GET /server_info` or `/get_server_info`; every version: the
    speculative settings and `avg_spec_accept_length` (`speculative`).
    """

    max_model_len: Mapping[str, int] = field(default_factory=dict)
    max_total_num_tokens: int | None = None
    context_length: int | None = None
    configured_max_total_tokens: int | None = None
    version: str | None = None
    speculative: SpeculativeSettings | None = None


class PerRequestError(ValueError):
    """A per-request acceptance answer that is not what its engine sends (one line; never a guessed number)."""


@dataclass(frozen=True)
class RequestAcceptance:
    """One request's acceptance, as an engine reports it per request (`EngineAdapter.request_acceptance`);
    `acceptance_length` is decode-only, vLLM's definition (bonus token included, prefill token excluded)."""

    completion_tokens: int
    verify_calls: int
    acceptance_length: float
    correct_drafts: int | None
    proposed_drafts: int | None
    correct_drafts_histogram: tuple[int, ...]

    @property
    def acceptance_rate(self) -> float | None:
        if not self.proposed_drafts:
            return None
        return (self.correct_drafts or 0) / self.proposed_drafts


def positions_depth(spec: SpecCounters) -> int | None:
    """k as per-position counters show it: one series per draft position (vLLM creates exactly
    `num_speculative_tokens` of them; an engine with per-position series is read the same way); None without."""
    return len(spec.accepted_per_position) if spec.accepted_per_position else None


class GetJson(Protocol):
    """One bounded GET of an engine's JSON endpoint (`exporter.scrape.Scraper`): the object, or None when
    the endpoint failed or did not answer a JSON object. `v1`: a `/v1/*` path (the API key goes with it)."""

    def __call__(self, path: str, v1: bool = False) -> Mapping[str, Any] | None:
        ...


class EngineAdapter(ABC):
    """One subclass per engine (Flagger-style pluggable source), registered in `exporter.engines.ADAPTERS`.

    Besides reading pages (`snapshot`, `side_info`, `side_incomplete`, which every engine writes), the class
    holds the engine's rules as hooks the engine-neutral core calls on the class found by the snapshot's
    engine kind (`ADAPTERS[kind]`), never by comparing names. Each hook has the engine-neutral default here,
    so an engine overrides only what differs.
    """

    kind: EngineKind
    prefixes: tuple[str, ...]
    families: frozenset[str]  # base names (prefix stripped) this adapter consumes
    # The largest pool, context cap or pool token count this engine can report (`exporter.sanity` leaves larger
    # ones out as `impossible`): `exporter.bounds.MAX_POOL_TOKENS` unless an engine states its own, with its reason.
    max_pool_tokens: int = MAX_POOL_TOKENS

    @abstractmethod
    def snapshot(self, page: ParsedPage, timestamp: float, side: SideInfo | None = None) -> EngineSnapshot:
        """Normalise one parsed page into a snapshot."""

    @abstractmethod
    def side_info(self, get_json: GetJson) -> SideInfo:
        """What the engine's other endpoints tell (which endpoints, and how to read them, is the engine's);
        a failed endpoint leaves its facts unknown."""

    @abstractmethod
    def side_incomplete(self, side: SideInfo) -> bool:
        """Whether `side` lacks what this engine's side endpoints should have given (asked again later)."""

    # The field of a `POST /tokenize` body that holds the text (`gate.probe.workload.TOKENIZE_BODIES`): vLLM's and
    # SGLang's OpenAI-style `{"model", "prompt"}` by default.
    tokenize_field: str = "prompt"

    # Per-request acceptance, as a streamed `/v1/completions` answer carries it (`gate.probe.per_request`).
    acceptance_source: str | None = None  # where in the stream the engine puts it, in words ("vLLM's metrics")

    @staticmethod
    def carries_acceptance(usage_chunk: Mapping[str, Any] | None, details: Any) -> bool:
        """Whether a stream carries this engine's per-request acceptance: its final usage chunk, or the
        `sglext.spec_tokens_details` chunk (`details`). Default: no (the engine reports none per request)."""
        return False

    @staticmethod
    def request_acceptance(usage_chunk: Mapping[str, Any] | None, details: Any,
                           completion_tokens: int) -> RequestAcceptance | None:
        """The request's acceptance from a stream that `carries_acceptance`; None when it ran without speculation,
        `PerRequestError` (one line) when what it carries is not the engine's shape. Default: none."""
        return None

    # The depth k (`exporter.depth`; a page's identity, `gate.evidence.captures.identity_of`).
    @staticmethod
    def configured_depth(speculative: SpeculativeSettings | None, stream: StreamSnapshot,
                         told: int | None = None) -> tuple[int, str] | None:
        """The configured maximum k of a speculating stream and where it was read (`names.SPEC_DEPTH_MAX`'s
        `source`), first found wins; None for a stream without speculation or when nothing says. Default:
        1. `positions`: the stream's per-position counter series (`positions_depth`);
        2. `schedule`: the largest k of the schedule the exporter was told (`told`)."""
        if stream.spec is None:
            return None
        k = positions_depth(stream.spec)
        if k is not None:
            return k, "positions"
        return (told, "schedule") if told is not None else None

    @staticmethod
    def variable_by_construction(speculative: SpeculativeSettings | None) -> bool:
        """The engine's reported algorithm drafts a different number of tokens every round by construction.
        Default: no (the measured mean decides, `exporter.derive._depth_in_window`)."""
        return False

    @staticmethod
    def counted_depth(spec: SpecCounters) -> int | None:
        """k as one stream's counters show it (a page's identity). Default: `positions_depth`."""
        return positions_depth(spec)

    @staticmethod
    def settings_depth(speculative: SpeculativeSettings | None) -> int | None:
        """k as the engine's reported settings say it, for a page whose counters do not. Default: unknown."""
        return None

    # Counting (`exporter.derive`, `exporter.snapshot_json`): what an engine counts besides vLLM's drafts.
    @staticmethod
    def draft_counts(verify_calls: float, generation_tokens: float | None, finished_requests: float | None,
                     num_draft_tokens: float | None) -> DraftCounts | None:
        """vLLM's counts from a stream's verify calls (`SpecCounters.verify_calls`, one per draft round) with its
        generated tokens and finished requests, cumulative or over a window. Default: None (the engine counts
        drafts itself; it reports no verify calls)."""
        return None

    @staticmethod
    def interval_gauge_is_new(before: SpecCounters | None, after: SpecCounters, generation: float | None,
                              reset: bool) -> bool:
        """Whether the stream's interval acceptance gauge (`SpecCounters.accept_length_gauge`) holds data from
        this window. Default: no (the engine reports no such gauge; its L comes from counters)."""
        return False

    @staticmethod
    def rate_from_length(length: float, num_draft_tokens: float) -> float | None:
        """The acceptance rate of an interval gauge's length L with `num_draft_tokens`. Default: unknown."""
        return None

    # Depth schedules (`exporter.schedule`). The exporter setting (an `exporter.settings.ExporterSettings` field)
    # that tells this engine's schedule; None: the exporter is told none for this engine.
    schedule_setting: str | None = None

    @staticmethod
    def told_schedule(config: Mapping[str, object] | None) -> DepthSchedule | None:
        """The depth schedule the exporter was told in `schedule_setting` (its JSON object; None: the engine's
        built-in default), read as the engine reads it; ValueError (one line) for one the engine would refuse."""
        return None
