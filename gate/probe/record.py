"""The probe record, writer side: what `specgate probe` writes and `specgate compare` reads.

The record type and its validated reader are evidence (`gate.evidence.probes`, floor 2): the gate's
acceptance line and tune read the same files, and the tools (floor 2½) sit above the evidence they
write. Import them from there; this module holds only the writer's one rule: the text a record is
written as.
"""

from __future__ import annotations

from gate.evidence.probes import ProbeRecord
from gate.inputs.jsontext import dumps


def dump(record: ProbeRecord) -> str:
    """The record as the probe writes it: indented JSON with a final newline (what `load_record` reads back);
    a non-finite number is InputError (gate.inputs.jsontext), never `NaN` in a record."""
    return dumps(record.to_json(), "probe record") + "\n"
