"""The plan's `evidence.reported.acceptance_card`: a drafter's published acceptance card (issue 37 item 4).

Why a key of `reported`: a card is a fact from a run that is not live (the drafter's authors' benchmark), with its
source, like every `evidence.reported.*` value. The post phase judges live L and each draft position against it
(gate.checks.acceptance.card); the chart passes the same document to the exporter (`--acceptance-card`), which
exposes it beside live acceptance. Its checks and its conversion to the exporter's per-position definition are
`exporter.card`'s (one address): this model gives the schema, and refuses what `exporter.card.read_card` refuses.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from exporter.card import DEFAULT_ROW, Card, read_card

Rate = Annotated[float, Field(ge=0, le=1)]


class CardRow(BaseModel):
    """One row of a card: overall, or a task subset (HumanEval, writing)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1, description="the row's name: overall, or a task subset (humaneval, writing)")
    positions: list[Rate] | None = Field(
        default=None, description="acceptance rate per draft position (pos_0, pos_1, ...), as the card states them")
    acceptance_length: Annotated[float, Field(ge=1)] | None = Field(
        default=None, description="the card's acceptance length L (accepted tokens per verify, bonus included)")


class AcceptanceCard(BaseModel):
    """A drafter's acceptance card, the row this deployment's traffic matches, and how drift against it is judged."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    source: str = Field(description="where the card comes from (a model card, speculators #1135)")
    rates: Literal["conditional", "unconditional"] = Field(
        description="conditional: P(position i accepted | every earlier one was); unconditional: the share of drafts "
                    "whose position i was accepted (u_i = product of the conditional rates up to i)")
    depth: Annotated[int, Field(gt=0, le=64)] | None = Field(
        default=None, description="the k the card was measured at (default: its number of positions)")
    rows: list[CardRow] = Field(
        min_length=1, description="the card's rows, each by its name: overall, or a task subset (humaneval, writing)")
    row: str = Field(
        default=DEFAULT_ROW, description="the row matching this deployment's traffic (a task subset only where the "
                                         "traffic is split by model name or pod set)")
    min_fraction: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.8, description="live acceptance below this fraction of the card's is drift (post phase)")
    on_drift: Literal["fail", "inconclusive"] = Field(
        default="fail", description="the acceptance line's status when live acceptance drifts below the card")

    @model_validator(mode="after")
    def _holds(self) -> AcceptanceCard:
        _ = self.card  # exporter.card's checks: a row that exists, rates that can hold, L within 1..1 + k
        return self

    @property
    def card(self) -> Card:
        """The matching row, converted (exporter.card.read_card); ValueError when the card does not hold."""
        return read_card(self.model_dump(exclude_none=True))
