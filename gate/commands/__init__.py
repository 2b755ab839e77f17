"""One module per `specgate` subcommand: each has `add_arguments(parser)` and `run(args) -> int`.

Modules keep heavy imports (kubernetes, the gate's checks) inside `run` so `specgate --help`
stays fast.
"""
