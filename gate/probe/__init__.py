"""`specgate probe`: drive a live engine with a request mix and write a probe record.

record (the typed JSON record), workload (mixes and prompts), client (streaming completions
timed client-side), runner (warm-up, cells, per-cell /metrics attribution). `gate.probe.compare`
reads the records of two arms.
"""
