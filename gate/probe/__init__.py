"""`specgate probe`: drive a live engine with a request mix and write a probe record.

record (the typed JSON record), workload (mixes and prompts), batch (closed or open loop), client
(streaming completions timed client-side), runner (warm-up, cells, per-cell /metrics attribution),
per_request (streamed acceptance per request), ceiling, null_engine and progress (the client's own
limits and its progress), importers (other tools' results as records). The tool never reads its
records back to judge them: two arms are compared by `gate.checks.acceptance.comparison` (what
`specgate compare` prints), each point's arithmetic on floor 0 (gate.model.speedup.point, pays).
"""
