"""`specgate tune`: which speculation depth k pays at which concurrency, before deploying.

depth (acceptance by depth from per-position counters, extrapolation with a band), cost
(t_cycle(k, B) fitted or declared), predict (speedup and its band, best k, crossover),
inputs (captures, plan, tune input files), report (text, json), plot (PNG).
"""
