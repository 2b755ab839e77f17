"""gate.inputs.loading: hostile files end as one InputError line, never a traceback or a hang (issue 10, item 1).

Controls: the committed example plans and the real config fixtures still load unchanged.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
import yaml

from gate.inputs.loading import (
    CONFIG_LIMITS,
    PLAN_LIMITS,
    InputError,
    Limits,
    check_regular,
    load_json,
    load_yaml,
    parse_json,
    parse_yaml,
    read_bytes,
)
from tests.gate.helpers import CONFIGS, PLANS


def test_example_plans_load_as_pyyaml_does() -> None:
    """Control: the three seed plans parse to what yaml.safe_load gives (no key refused, no value changed)."""
    plans = sorted(PLANS.glob("*.yaml"))
    assert len(plans) >= 3
    for p in plans:
        assert load_yaml(p) == yaml.safe_load(p.read_text(encoding="utf-8")), p.name


def test_real_configs_load_as_json_does() -> None:
    """Control: every real config fixture parses to what json.loads gives."""
    configs = sorted(CONFIGS.glob("*.json"))
    assert len(configs) >= 10
    for p in configs:
        assert load_json(p) == json.loads(p.read_text(encoding="utf-8")), p.name


def test_duplicate_yaml_key_refused_with_both_lines() -> None:
    text = "slo:\n  target_acceptance_length: 2.0\n  target_acceptance_length: 1.1\n"
    with pytest.raises(InputError, match=r"duplicate key 'target_acceptance_length' at line 3.*first at line 2"):
        parse_yaml(text, "plan p.yaml")
    assert yaml.safe_load(text) == {"slo": {"target_acceptance_length": 1.1}}  # what PyYAML alone does: last wins


def test_duplicate_json_key_refused() -> None:
    with pytest.raises(InputError, match="duplicate key 'head_dim'"):
        parse_json('{"head_dim": 128, "head_dim": -128}', "config c.json")


def test_deep_yaml_refused_before_recursion() -> None:
    deep = "a: " + "[" * 5000 + "]" * 5000
    with pytest.raises(InputError, match=f"nested deeper than {PLAN_LIMITS.max_depth} levels"):
        parse_yaml(deep, "plan p.yaml")


def test_deep_json_refused() -> None:
    for n in (PLAN_LIMITS.max_depth + 1, 200_000):
        with pytest.raises(InputError, match="nested deeper than"):
            parse_json("[" * n + "]" * n, "config c.json")
    assert parse_json("[" * 5 + "]" * 5, "config c.json") == [[[[[]]]]]


def test_huge_integers_refused() -> None:
    with pytest.raises(InputError, match="integer with 5000 digits"):
        parse_yaml("n: " + "9" * 5000, "plan p.yaml")
    with pytest.raises(InputError, match="integer with 5000 digits"):
        parse_json('{"num_hidden_layers": ' + "9" * 5000 + "}", "config c.json")
    # 10^12 has 13 digits: the loader keeps it; gate.inputs.validation refuses it as a layer count.
    assert parse_json('{"num_hidden_layers": 1000000000000}', "c")["num_hidden_layers"] == 10**12


def test_yaml_alias_bomb_refused() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b]\n"
    with pytest.raises(InputError, match="aliases"):
        parse_yaml(bomb, "plan p.yaml")


def test_yaml_syntax_error_names_position() -> None:
    with pytest.raises(InputError, match=r"not valid YAML: .* at line 2"):
        parse_yaml("a: 1\n b: [\n", "plan p.yaml")


def test_size_limit(tmp_path: Path) -> None:
    p = tmp_path / "big.yaml"
    p.write_text("a: " + "x" * 2000 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="over the 1,000-byte limit"):
        load_yaml(p, limits=Limits(max_bytes=1000))
    assert load_yaml(p, limits=Limits(max_bytes=3000)) == {"a": "x" * 2000}


def test_dev_zero_refused_without_reading() -> None:
    with pytest.raises(InputError, match="is a character device, not a regular file"):
        read_bytes("/dev/zero", "plan", PLAN_LIMITS.max_bytes)


def test_directory_and_missing_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        load_json(tmp_path)
    with pytest.raises(InputError, match="not found"):
        load_json(tmp_path / "nope.json")


def test_fifo_refused_without_hanging(tmp_path: Path) -> None:
    """A FIFO with no writer blocks a plain open() forever; here it is refused at once."""
    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            load_yaml(fifo)
            outcome.append(None)
        except BaseException as e:  # noqa: BLE001 - the test inspects what came out
            outcome.append(e)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(timeout=5)
    if t.is_alive():  # unblock the reader so the test process can end, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO hung")
    assert isinstance(outcome[0], InputError) and "is a FIFO" in str(outcome[0])
    with pytest.raises(InputError, match="FIFO"):
        check_regular(fifo, "capture")


def test_symlink_to_regular_file_is_read(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text('{"a": 1}', encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert load_json(link) == {"a": 1}


def test_binary_file_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "c.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="not UTF-8") as e:
        load_json(p, limits=CONFIG_LIMITS)
    assert "\n" not in str(e.value)
