"""The Prometheus HTTP API's answers as typed data, decoded in one pass (msgspec), for the fleet's queries.

Why typed decoding: at 5,000 pods a range answer is ~6.7 MB and 300,000 points; `json.loads` builds a list,
an int and a string for every point (~0.35 s of CPU per answer on the project machine, and ~160 B a point
alive at once), then each string is turned into a float again. Decoding straight into `(time, value)`
float pairs with `msgspec` (non-strict: the API's values are strings, `"2734"` → 2734.0) took ~0.07 s for
the same answer (measured, docs/scale.md). The shapes are the API's own (`/api/v1/query_range`:
`{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {...}, "values": [[t, "v"],
...]}]}}`; `/api/v1/query`: `"vector"` with one `"value"` each). Anything the typed decoder does not accept
— an error answer, a value that is not a number (`"+Inf"`), a label value that is not a string, another
result type — returns None, and the caller reads the answer the generic way (`json.loads`), where every
rule of `gate.evidence.fleet.collect` and `grid` applies as before: typed decoding is a fast path, never a
second set of rules. A partial answer (Prometheus/Thanos `warnings`, VictoriaMetrics `isPartial: true`) is also
left to the generic path, which refuses it (`gate.model.invariants.partial_answer`: completeness). Other unknown
fields (VictoriaMetrics' `stats`) are ignored.
"""

from __future__ import annotations

import msgspec


class MatrixSeries(msgspec.Struct):
    """One series of a range answer: its labels and its (time, value) points."""

    metric: dict[str, str]
    values: list[tuple[float, float]]


class VectorSample(msgspec.Struct):
    """One sample of an instant answer: its labels and its (time, value)."""

    metric: dict[str, str]
    value: tuple[float, float]


class _Matrix(msgspec.Struct):
    resultType: str  # noqa: N815 (the API's field name)
    result: list[MatrixSeries]


class _Vector(msgspec.Struct):
    resultType: str  # noqa: N815 (the API's field name)
    result: list[VectorSample]


class _MatrixAnswer(msgspec.Struct):
    status: str
    data: _Matrix
    warnings: list[str] | None = None
    isPartial: bool | None = None  # noqa: N815 (VictoriaMetrics' field name)


class _VectorAnswer(msgspec.Struct):
    status: str
    data: _Vector
    warnings: list[str] | None = None
    isPartial: bool | None = None  # noqa: N815 (VictoriaMetrics' field name)


_MATRIX = msgspec.json.Decoder(_MatrixAnswer, strict=False)
_VECTOR = msgspec.json.Decoder(_VectorAnswer, strict=False)


def decode(body: bytes | bytearray, kind: str) -> list[MatrixSeries] | list[VectorSample] | None:
    """A successful `matrix` (kind "range") or `vector` (kind "instant") answer's result, or None when the body
    is anything else (the caller then reads it the generic way)."""
    try:
        if kind == "range":
            m = _MATRIX.decode(body)
            whole = not m.warnings and m.isPartial is not True
            return m.data.result if whole and m.status == "success" and m.data.resultType == "matrix" else None
        v = _VECTOR.decode(body)
        whole = not v.warnings and v.isPartial is not True
        return v.data.result if whole and v.status == "success" and v.data.resultType == "vector" else None
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
