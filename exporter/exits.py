"""The process exit code both command lines share for invalid input (floor 0: no imports).

Why here: `specgate exporter …` and the gate's commands are one console script, and a user's
script tests one number for "you gave me bad input". The exporter may not import the gate, so
the code lives on the exporter's side and `gate.status` takes it from here.
"""

EXIT_OK = 0
EXIT_INVALID = 3
