"""What the artifacts are, from their files alone: configs, dtypes, KV geometry, pools, weights, the bill.

`config` (reading config.json, resolving the text model once: `ModelConfig`; drafter families),
`dtypes`, `geometry` (bytes per token by layer kind; `breakdown()` a view), `pools` (how each engine
turns KV bytes into a token pool and what it charges a drafter), `weights` (safetensors metadata),
`facts` (a plan's artifacts read once: `ArtifactFacts`) and `budget` (the memory bill the kv_pool and
artifacts lines judge). Nothing here imports evidence: it is arithmetic on configs, whatever was measured.
"""
