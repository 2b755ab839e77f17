"""Names `make lint`'s vulture (`vulture exporter gate tools/vulture_whitelist.py --min-confidence 60`) cannot
see used, each with why. Vulture reads only exporter/ and gate/; a name used by a framework, by reflection or
only from outside those two trees is listed here, never silenced by lowering the confidence.

A new entry needs a reason in its section. A name that is simply not called any more is dead code: delete it
instead. The file is never imported; `_` stands for any object (vulture counts an attribute read as a use).
"""
# ruff: noqa: B018 - each line is a read of a name, nothing else

from __future__ import annotations


class _Any:
    def __getattr__(self, name: str) -> _Any:
        return self


_ = _Any()

# ---- pydantic: the model's config and its validators are called by pydantic, not by us
_.model_config
_._windows_positive  # exporter/settings.py
_._listen  # exporter/settings.py
_._duration  # exporter/settings.py
_._environment  # exporter/settings.py: the SPECGATE_ variables, a model validator
_._finite  # gate/evidence/probes.py
_._one_config  # gate/plan/model.py
_._scope_inputs  # gate/plan/model.py
_._header_safe  # gate/plan/model.py
_._coherent  # gate/plan/model.py
_._not_empty  # gate/plan/model.py (Cohorts)
_._consistent  # gate/plan/model.py (EnergyArm, issue 38)

# ---- http.server / socketserver hooks and class attributes (called or read by the standard library)
_.log_message
_.daemon_threads
_.do_HEAD
_.do_POST
_.server_version
_.sys_version
_.protocol_version

# ---- fields of documents we write or read whole (pydantic model_dump, dataclass to_json by reflection):
# part of a file format or an HTTP answer, so present even where no gate code reads them back
_.schema_, _.created_at, _.prompts_from, _.chunk_gap_seconds, _.p90, _.p99  # probe record (gate/evidence/probes.py)
_.n_baseline, _.n_speculative, _.baseline_tpot_seconds, _.speculative_tpot_seconds  # compare's JSON points
_.ratio_low, _.ratio_high  # compare's JSON energy points (gate/model/speedup/energy.EnergyResult, issue 38)
_.model_artifact, _.image_tag, _.context_limit_tokens, _.speculative_decoding  # the run record (gate/verdict/record.py)
_.reported_prompt_tokens, _.output_tokens_per_request, _.correctness_checks, _.queueing_observed
_.failures_observed, _.field_basis, _.evidence_sources
_.trained_against, _.outcome  # plan keys a user writes (gate/plan/model.py; docs/reference/plan.md)
_.checksum  # Flagger's webhook payload (gate/webhook.py)
_.numbers  # gate/model/plausibility.Implausible: the numbers that show why, for a reader of the finding
_.correct_drafts_histogram  # gate/probe/per_request.RequestAcceptance: the engine's histogram, kept as given
_.start_source, _.image_digests  # gate/evidence/pods.PodFacts: where a start time came from, the images run
_.charged_tokens, _.over_reserved_bytes  # gate/model/pools.DraftKV: what the engine charges vs what is needed
_.fraction_source  # gate/bill/gpu_memory.GpuMemoryBill: where the memory fraction came from
_.below_slo_share, _.min_acceptance_length  # gate/evidence/fleet/table.py: the fleet table's summary columns
_.last_error  # exporter/state.ExporterState: the last scrape error, for a reader of the state (tests, a debugger)

# ---- plan keys the engines' profiles read from `engine.speculative.model_dump()` (gate/model/engines/*.depth_schedule)
_.num_speculative_tokens_per_batch_size, _.speculative_adaptive, _.draft_len_schedule  # gate/plan/model.py
_.rejection_sample_method, _.synthetic_acceptance_length, _.synthetic_acceptance_rates  # gate/plan/model.py
_.draft_sample_method, _.enable_adaptive_verification, _.require_lossless  # gate/plan/model.py (identity, simulated)
_.speculative_use_block_verification, _.speculative_use_rejection_sampling  # gate/plan/model.py (SGLang's flags)
_.vocab_size, _.vocab_type  # gate/plan/model.py: llama.cpp's vocabulary facts, read by the profile from model_dump()
_.engine_steps  # gate/evidence/probes.Cell: steps behind engine_step_seconds, recorded for a reader of the record
_._holds  # gate/plan/card.AcceptanceCard: a pydantic model validator (called by pydantic)

# ---- an argument a caller passes by position or keyword: the signature is socket.create_connection's
_.source_address  # exporter/scrape.deadline_connection

# ---- contracts read from outside exporter/ and gate/
_.SERIES, _.RECORDED, _.FOREIGN_SERIES  # exporter/names.py: the recording rules' and the mixin's names (tests/observability)
_.parse_page  # exporter/parse.py: the parser's whole-page entry (the differential tests, bench/)
_.to_metric  # exporter/exposition.py: rows as prometheus_client families (tests/exporter/oracle.py)
_.served_rates  # gate/model/plausibility.py: tools/demo.py
_.state_bytes_per_sequence  # gate/model/geometry.KVGeometry: the per-sequence state (tests/gate/model)
_.cumulative  # exporter/engines/base.StreamSnapshot: the restart rule's definition (tests/exporter)
_.intake, _.invariants  # gate/evidence/intake.Source: each source's registration (tests/gate/hostile reads them)
_.enforced_by  # gate/model/invariants.Invariant: where each invariant is enforced (tests/gate/hostile, design.md)
