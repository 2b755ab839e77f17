"""The bounds every value an engine adapter reads is held to, declared once (issue 34, item 2).

No engine runs a draft depth above 64 or a KV pool above 2**40 tokens (a trillion tokens: ~4,000 times the
largest pools of today's GPU nodes); a larger value is a broken or hostile page, not a measurement, and passed
through it would be exported as such (`1.6e+301` pool tokens) or overflow the float the exposition writes.
`exporter.sanity.check_snapshot` applies them to every snapshot, whichever engine's adapter made it (values left
out and counted as `impossible`); `exporter.schedule` refuses a depth schedule past `MAX_DEPTH`. Pure constants,
no imports: every floor of the exporter may read them.
"""

from __future__ import annotations

# The deepest draft a stream may run: k <= 64 wherever k is read (per-position series, SGLang's gauges and
# `/server_info`, adaptive candidate steps, vLLM and TensorRT-LLM schedules). SGLang's draft-token count holds
# the verified root too (k = num_draft_tokens - 1), so it may read up to MAX_DEPTH + 1; an acceptance length
# includes the bonus token (L <= 1 + k).
MAX_DEPTH = 64

# The largest KV pool, context cap or count of tokens in a pool an adapter may report, unless the adapter states
# its own bound with its reason (`EngineAdapter.max_pool_tokens`).
MAX_POOL_TOKENS = 2**40
