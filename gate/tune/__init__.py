"""`specgate tune`'s tool half: which speculation depth k pays at which concurrency, read and printed.

The arithmetic is floor 0 (gate.model.speedup: the acceptance curves, the cycle cost, the predictor,
the one orchestrator `tune.run`, the bands of `--emit`); here is what reads and writes around it:
inputs (the command's readers: captures, plan, tune input files, exporter, merged into `TuneInputs`),
probe_costs (probe records as counters and costs), report (text, json), plot (PNG), emit (`--emit`: the
bands handed to the engine profile's schedule writer, gate.model.engines).
"""
