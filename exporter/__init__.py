"""specgate exporter: scrape a vLLM/SGLang engine, normalise, derive, expose specgate_* metrics.

Never imports `gate` (dependencies point one way: gate -> exporter).
"""

__version__ = "0.1.0"
