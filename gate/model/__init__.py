"""Floor 0: the rules and the arithmetic, on configs and numbers alone — nothing here imports evidence.

`config` (reading config.json, resolving the text model once: `ModelConfig`; drafter families), `dtypes`,
`geometry` (bytes per token by layer kind; `breakdown()` a view), `pools` (a drafter's KV need against the
engine's charge), `depth` (the depth k, the method sets, depth schedules), `identity` and `plausibility`
(what evidence may say of a plan, and what acceptance numbers are possible), `engines/` (one profile package
per engine: `PROFILES`, `BaseProfile`; each engine's spelling of k, its pool arithmetic, flags and rules) and
`speedup/` (the predicted speedup: acceptance curves, cycle cost, prediction, bands). The memory bill the
kv_pool and artifacts lines judge is `gate.bill`.
"""
