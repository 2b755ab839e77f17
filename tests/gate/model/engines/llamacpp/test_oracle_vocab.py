"""llama-server b11434's own answer on draft vocabularies, recorded by tools/oracle/llamacpp_vocab.py (tiny GGUFs
whose vocabularies differ by 0, 1, 128, 129 and 300 tokens, by BOS or EOS id, or by one token's text, each pairing
started as `llama-server --model target --spec-draft-model draft`), replayed against the gate's
`vocabulary_rule`: it passes where the server speculates and fails where the server drops the draft. Every row
agrees or is listed in EXCEPTIONS.md with llama.cpp's behaviour."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.model.engines.llamacpp import Vocabulary, vocabulary_of, vocabulary_rule
from gate.status import Status
from tests.gate.model.engines.oracle import exceptions

ORACLE = Path(__file__).resolve().parents[4] / "fixtures" / "oracle"
NAME = "llamacpp-11434-vocab.json"
DATA = json.loads((ORACLE / NAME).read_text())


def _vocabulary(facts: dict[str, Any]) -> Vocabulary:
    """The facts as the gate reads them: config.json's keys, the vocab type declared in the plan."""
    return vocabulary_of({k: facts[k] for k in ("vocab_size", "bos_token_id", "eos_token_id")},
                         {"vocab_type": facts["vocab_type"]})


def gate_speculates(inputs: dict[str, Any]) -> bool:
    status = vocabulary_rule(_vocabulary(inputs["target"]), _vocabulary(inputs["drafter"])).status
    assert status in (Status.PASS, Status.FAIL), status  # every fact is given: never inconclusive here
    return status is Status.PASS


def test_the_fixture_says_where_it_comes_from() -> None:
    assert (DATA["engine"], DATA["version"]) == ("llama.cpp", "b11434")
    assert "tools/oracle/llamacpp_vocab.py" in DATA["made_by"] and "common_speculative_are_compatible" in DATA["call"]
    # the 128-token edge, on both sides, is in the recording, and every pairing brought the server up
    sizes = {r["inputs"]["drafter"]["vocab_size"] - r["inputs"]["target"]["vocab_size"]: r["answer"]["speculates"]
             for r in DATA["rows"]}
    assert sizes[128] is True and sizes[129] is False
    assert all(r["answer"]["server_up"] for r in DATA["rows"])
    assert all(any("not compatible" in x for x in r["answer"]["log"]) != r["answer"]["speculates"]
               for r in DATA["rows"])


@pytest.mark.parametrize("index", range(len(DATA["rows"])))
def test_row_agrees_or_is_a_stated_exception(index: int) -> None:
    row = DATA["rows"][index]
    agrees = gate_speculates(row["inputs"]) == row["answer"]["speculates"]
    if index in exceptions(NAME):
        assert not agrees, f"#{index} agrees: take it off EXCEPTIONS.md"
    else:
        assert agrees, f"#{index} {row['inputs']['case']}: llama-server {row['answer']}"
