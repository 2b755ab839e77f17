"""A kept `ExpositionWriter` reuses the text of a family whose rows did not change (issue 26 part 2: the
53 KB page's cycle); every render must still be the bytes a fresh writer writes for the same rows.

The traps: `-0.0 == 0.0` (written "-0.0" and "0.0"), `0 == 0.0 == False` (all written "0.0"), NaN
(never equal to itself), rows added to a family's list after a render, a full label memory.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.exposition import ExpositionWriter, FamilyRows, HistogramRows
from exporter.names import Family

GAUGE = Family("specgate_a", "gauge", "h", ("model",))
COUNTER = Family("specgate_b", "counter", "h", ("model",))
HIST = Family("specgate_c_seconds", "histogram", "h", ("model",))
# the values whose texts a careless reuse gets wrong, and a few ordinary ones
tricky = st.sampled_from([0.0, -0.0, 0, 1, 1.0, float("nan"), float("inf"), -1.0, 2.5, 1e7])


def _rows(values: list, hist: list) -> list[FamilyRows | HistogramRows]:
    g, c, h = FamilyRows(GAUGE), FamilyRows(COUNTER), HistogramRows(HIST)
    for i, v in enumerate(values):
        g.add_metric((f"m{i}",), v)
        c.add_metric((f"m{i}",), v)
    for i, (b, s) in enumerate(hist):
        h.add_metric((f"m{i}",), [("1.0", b), ("+Inf", b)], s)
    return [g, c, h]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(renders=st.lists(st.tuples(st.lists(tricky, max_size=3),
                                  st.lists(st.tuples(tricky, st.one_of(st.none(), tricky)), max_size=2)),
                        min_size=1, max_size=6),
       repeat=st.integers(1, 3))
def test_a_kept_writer_writes_what_a_fresh_one_writes_render_after_render(renders: list, repeat: int):
    kept = ExpositionWriter()
    for values, hist in renders:
        for _ in range(repeat):  # the same rows again and again: from the third render on, texts are reused
            assert kept.write(_rows(values, hist)) == ExpositionWriter().write(_rows(values, hist))


def test_negative_zero_after_zero_is_written_as_negative_zero():
    kept = ExpositionWriter()
    for v in (0.0, 0.0, 0.0, -0.0, -0.0, -0.0, 0, 0.0):
        got = kept.write(_rows([v], [(v, v)])).decode()
        assert got == ExpositionWriter().write(_rows([v], [(v, v)])).decode()
        assert ('specgate_a{model="m0"} -0.0\n' in got) == (str(v) == "-0.0")


def test_rows_added_to_the_same_family_after_a_render_are_written():
    fam = FamilyRows(GAUGE)
    fam.add_metric(("m0",), 1.0)
    kept = ExpositionWriter()
    kept.write([fam])
    kept.write([fam])
    fam.add_metric(("m1",), 2.0)
    assert kept.write([fam]) == ExpositionWriter().write([fam])
    assert b'specgate_a{model="m1"} 2.0\n' in kept.write([fam])


def test_a_family_over_the_label_memory_is_not_kept_as_text():
    fam = FamilyRows(GAUGE)
    for i in range(50):
        fam.add_metric((f"m{i}",), float(i))
    kept = ExpositionWriter(label_texts=8)
    expected = ExpositionWriter().write([fam])
    for _ in range(3):
        assert kept.write([fam]) == expected
    assert not kept._texts  # its lines are not all remembered: neither is its text
