"""`specgate tune`: which speculation depth k pays at which concurrency, before deploying.

`run(inputs, k_max, band, concurrency) -> TuneResult` (gate.tune.orchestrate) is the one orchestrator,
for the command and the acceptance line's depth advice (advice). depth (acceptance by depth from
per-position counters, extrapolation with a band), cost (t_cycle(k, B) fitted or declared), predict
(speedup and its band, best k, crossover), inputs (the command's readers: captures, plan, tune input
files, exporter), probes (probe records as costs), report (text, json), plot (PNG), emit (`--emit`: the best
k per band of batch sizes as a schedule vLLM, SGLang or TensorRT-LLM runs).
"""

from gate.model.speedup.predict import TuneResult
from gate.tune.orchestrate import TuneInputs, run

__all__ = ["TuneInputs", "TuneResult", "run"]
