"""The drafter's acceptance card beside live acceptance (`--acceptance-card`; exporter.card converts it).

Example exposition (a conditional card [0.8, 0.75, 0.5] at a fixed depth 3, window 1m)::

    specgate_spec_card_info{engine="vllm",rates="conditional",row="overall"} 1.0
    specgate_spec_card_position_acceptance_rate{basis="exact",engine="vllm",model="tiny",position="1",rank="0",window="1m"} 0.6
    specgate_spec_card_acceptance_length{basis="exact",engine="vllm",model="tiny",rank="0",window="1m"} 2.7

Why per window and stream, with the live gauges' labels: the depth a card converts at (fixed or varying, k̄,
k_max) is the live window's, and identical labels let an alert compare `live < 0.8 * card` one to one. A window
without live acceptance (too few drafts) has no card series either: no traffic is never drift. Without a card
nothing here is written (the goldens hold).
"""

from __future__ import annotations

from collections.abc import Iterator

from exporter import names
from exporter.card import length_values, position_values
from exporter.collect.families import Rows, gauge, non_empty, stream_labels
from exporter.state import ExporterView


def families(v: ExporterView) -> Iterator[Rows]:
    card = v.card
    if card is None:
        return
    info, prate, length = gauge(names.CARD_INFO), gauge(names.CARD_POSITION_RATE), gauge(names.CARD_ACCEPTANCE_LENGTH)
    info.add_metric((v.engine, card.row, card.rates), 1.0)
    for window in v.sliding:
        for w in window.stats:
            lv = (*stream_labels(w.model, w.engine, w.rank), window.label)
            if w.acceptance_length is not None:
                for c in length_values(card, w.depth_max, w.depth_mean, w.depth_varies):
                    length.add_metric((*lv, c.basis), c.value)
            if v.position_gauges and w.position_acceptance_rate:
                # at the live gauge's basis: exact only when the window's own per-position rates are exact
                varies = w.position_basis != "exact"
                for i, c in position_values(card, w.depth_max, w.depth_mean, varies):
                    prate.add_metric((*lv, str(i), c.basis), c.value)
    yield from non_empty(info, prate, length)
