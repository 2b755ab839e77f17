"""specgate gate: decides whether a draft-model rollout may proceed (five budget lines + acceptance SLO).

May import `exporter` (engine names and formulas live there); never the other way round.
"""
