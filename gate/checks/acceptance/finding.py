"""What one acceptance sub-check returns: a `Finding`, folded by `gate.checks.acceptance.check`.

Why a type and not a (statuses, sentences, values) triple: the line is the worst of its sub-checks
(`gate.status.combine`), its reason their sentences in order, its values their keys in order — a
sub-check that says nothing returns `Finding()` (no status, no sentence, no values), and a new
sub-check is one module returning this, plus one entry in `SUBCHECKS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gate.status import Status, combine


@dataclass(frozen=True)
class Finding:
    """One sub-check's answer.

    `status`: None when the sub-check does not judge (it neither passes nor holds the line back);
    `sentence`: its clause of the line's reason ("" for none; clauses of one sub-check joined by "; ");
    `values`: the keys it owns in the line's JSON values, in order (read-only).
    """

    status: Status | None = None
    sentence: str = ""
    values: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    @classmethod
    def of(cls, statuses: list[Status], parts: list[str], values: Mapping[str, Any] | None = None) -> Finding:
        """Several statuses and clauses of one sub-check as one finding (the worst status; the clauses in order)."""
        return cls(combine(statuses) if statuses else None, "; ".join(p for p in parts if p), values or {})
