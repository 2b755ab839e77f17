"""A fifth engine, "stub", as a new engine would arrive: one package per side and nothing else.

`exporter_side/` is its adapter (what `exporter/engines/stub/` would hold), `gate_side/` its profile (what
`gate/model/engines/stub/` would hold). `test_fifth_engine.py` registers both the way the two registry lines
would (`ADAPTERS["stub"]`, `PROFILES["stub"]`) and runs the adapter and profile protocol tests and the
engine-neutral core on it. Nothing outside these files names it: issue 31's measure of engines as folders.
"""
