"""Floor 0: the speedup arithmetic — does speculation pay, and at which depth k — with no I/O.

Why here and not in the tools: the checks (floor 4) judge with these rules, and `specgate tune`
and `specgate compare` (the tools and faces) print them; a reader of the floor finds every rule that
decides "pays" without opening a tool. The modules take plain data (counters, cost samples, floats);
the evidence layer and the tools convert what they read.

- `counters`: per-position acceptance counters (`PositionCounters`, `pooled`, `CountersError`);
- `curves`: acceptance length L(k) by depth from the counters, extrapolation with a band;
- `cost`: the verify cycle's cost t_cycle(k, B), fitted or declared;
- `predict`: speedup by depth and concurrency, the best k, dominating depths;
- `tune`: the one tune orchestrator (`run`: counters and costs in, a `TuneResult` out);
- `advice`: the plan's k against tune's best k, for the acceptance line;
- `bands`: the best k per band of batch sizes (what `specgate tune --emit` writes);
- `pays`: the pays / does-not-pay / inconclusive verdict of a rank comparison (`Verdict`, `decide`);
- `point`: one probe point's numbers (speedup, rank tests, break-even L*) and its verdict.
"""
