"""Every rule at one address (design.md "Floors"): a copy elsewhere fails here, with its file and line.

| rule | its one address |
|---|---|
| the acceptance length `1 + accepted / drafts` (and `1 + Σ p_i`) | `exporter/formulas.py` |
| the drafterless method set (`ngram`, `suffix`) | `gate/model/depth.py` |
| exit codes (`EXIT_*`; no bare `return 3` / `sys.exit(3)` in a command) | `exporter/exits.py`, `gate/status.py` |
| the order of statuses (fail > inconclusive > warn > pass > n/a) | `gate/status.py` |
| reading a file (`read_bytes`, `read_text`, `open(` for reading) | `gate/inputs/`, the exporter's capture readers |
| comparing an engine's name (`== "vllm"`, `in ("sglang", …)`, `case "vllm"`) | `exporter/engines/`, `gate/model/engines/` |

The engines are the registry's (`exporter.engines.ADAPTERS`), never a list of this file's own.

The scan reads the syntax tree, so docstrings and comments (which explain the rules) never count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter.engines import ADAPTERS

REPO = Path(__file__).resolve().parents[1]
ENGINES = frozenset(ADAPTERS)  # the one engine list; a fifth engine is seen here the day it is registered
READ_CALLS = frozenset({"read_bytes", "read_text"})


def _sources() -> list[Path]:
    return sorted(p for top in ("exporter", "gate") for p in (REPO / top).rglob("*.py"))


def _rel(p: Path) -> str:
    return p.relative_to(REPO).as_posix()


def _owned(rel: str, owners: tuple[str, ...]) -> bool:
    return any(rel == o or (o.endswith("/") and rel.startswith(o)) for o in owners)


def _const_one(n: ast.expr) -> bool:
    return isinstance(n, ast.Constant) and not isinstance(n.value, bool) and n.value in (1, 1.0)


def length_rule(tree: ast.AST) -> Iterator[int]:
    """`1 + x / y` or `1 + sum(...)`: the acceptance length written again."""
    for n in ast.walk(tree):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            for one, other in ((n.left, n.right), (n.right, n.left)):
                if _const_one(one) and (
                        (isinstance(other, ast.BinOp) and isinstance(other.op, ast.Div))
                        or (isinstance(other, ast.Call) and isinstance(other.func, ast.Name)
                            and other.func.id in ("sum", "fsum"))):
                    yield n.lineno


def _strings(n: ast.AST) -> set[object]:
    if isinstance(n, (ast.Set, ast.Tuple, ast.List)):
        return {e.value for e in n.elts if isinstance(e, ast.Constant)}
    return set()


def drafterless_rule(tree: ast.AST) -> Iterator[int]:
    """A literal collection holding both drafterless methods."""
    for n in ast.walk(tree):
        if {"ngram", "suffix"} <= _strings(n):
            yield n.lineno


def _int_constant(n: ast.expr | None) -> bool:
    return isinstance(n, ast.Constant) and type(n.value) is int and n.value in (1, 2, 3)


def exit_code_rule(tree: ast.AST) -> Iterator[int]:
    """`EXIT_… = n` defined again, a command (`run`, `main`) returning a bare 1, 2 or 3, or `sys.exit(3)`."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id.startswith("EXIT_")
                                             for t in n.targets) and isinstance(n.value, ast.Constant):
            yield n.lineno
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "exit" and n.args \
                and _int_constant(n.args[0]):
            yield n.lineno
        elif isinstance(n, ast.FunctionDef) and n.name in ("run", "main"):
            yield from (r.lineno for r in ast.walk(n) if isinstance(r, ast.Return) and _int_constant(r.value))


def status_order_rule(tree: ast.AST) -> Iterator[int]:
    """A ranking of statuses written again: a dict or a list naming three or more `Status.…` members (a tuple
    after `in` is a set of statuses, not an order, and is left alone)."""
    for n in ast.walk(tree):
        items = n.keys if isinstance(n, ast.Dict) else n.elts if isinstance(n, ast.List) else []
        members = [k for k in items if isinstance(k, ast.Attribute) and isinstance(k.value, ast.Name)
                   and k.value.id == "Status"]
        if len(members) >= 3:
            yield n.lineno


def _reads(call: ast.Call) -> bool:
    """`open(path)` or `open(path, "r…")` (writing a file is not reading one)."""
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return mode is None or (isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "r" in mode.value)


def file_read_rule(tree: ast.AST) -> Iterator[int]:
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in READ_CALLS:
            yield n.lineno
        elif isinstance(f, ast.Attribute) and f.attr == "open" and _reads(n):
            yield n.lineno
        elif isinstance(f, ast.Name) and f.id == "open" and _reads(n):
            yield n.lineno


def engine_name_rule(tree: ast.AST) -> Iterator[int]:
    """An engine's name compared (`==`, `!=`, `in`) or matched (`case "vllm"`)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            for side in (n.left, *n.comparators):
                if (isinstance(side, ast.Constant) and side.value in ENGINES) or _strings(side) & ENGINES:
                    yield n.lineno
                    break
        elif isinstance(n, ast.MatchValue) and isinstance(n.value, ast.Constant) and n.value.value in ENGINES:
            yield n.lineno


RULES = {
    "acceptance length": (length_rule, ("exporter/formulas.py",)),
    "drafterless methods": (drafterless_rule, ("gate/model/depth.py",)),
    "exit codes": (exit_code_rule, ("exporter/exits.py", "gate/status.py")),
    "status order": (status_order_rule, ("gate/status.py",)),
    # gate/inputs/ reads every file a user hands the gate; the exporter reads its own captures (replay,
    # `exporter once --file`); gate/plan/reference.py is `make plan-reference`'s writer, reading the
    # generated files it compares (a developer tool, no user input).
    "file reads": (file_read_rule, ("gate/inputs/", "exporter/scrape.py", "exporter/replay.py",
                                    "gate/plan/reference.py")),
    "engine names": (engine_name_rule, ("exporter/engines/", "gate/model/engines/")),
}


def _offenders(rule: str) -> list[str]:
    check, owners = RULES[rule]
    out = []
    for p in _sources():
        rel = _rel(p)
        if _owned(rel, owners):
            continue
        out += [f"{rel}:{line}" for line in check(ast.parse(p.read_text(encoding="utf-8"), rel))]
    return sorted(set(out))


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_lives_at_one_address(rule: str) -> None:
    assert _offenders(rule) == []


@pytest.mark.parametrize(("rule", "code"), [
    ("acceptance length", "L = 1.0 + accepted / drafts\n"),
    ("acceptance length", "L = 1 + sum(p)\n"),
    ("drafterless methods", "X = frozenset({'suffix', 'ngram'})\n"),
    ("exit codes", "EXIT_INVALID = 3\n"),
    ("exit codes", "def run():\n    return 3\n"),
    ("exit codes", "import sys\nsys.exit(2)\n"),
    ("file reads", "p.read_text()\n"),
    ("file reads", "open(p)\n"),
    ("engine names", "if kind == 'sglang':\n    pass\n"),
    ("engine names", "if kind in ('vllm', 'x'):\n    pass\n"),
    ("engine names", "match kind:\n    case 'vllm':\n        pass\n"),
    ("status order", "R = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}\n"),
])
def test_each_rule_sees_a_copy(rule: str, code: str) -> None:
    assert list(RULES[rule][0](ast.parse(code)))


@pytest.mark.parametrize(("rule", "code"), [
    ("acceptance length", "'''L = 1 + accepted / drafts'''\nx = 1 + y\n"),
    ("file reads", "open(p, 'w')\np.write_text(s)\n"),
    ("exit codes", "def run():\n    return 0\n"),
    ("exit codes", "def p_value():\n    return 1.0\n"),
])
def test_each_rule_lets_the_rest_be(rule: str, code: str) -> None:
    assert not list(RULES[rule][0](ast.parse(code)))
