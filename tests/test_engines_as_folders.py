"""Engines as folders (issue 31): engine knowledge lives in the engines' own packages, and the checks judge
with floor-0 arithmetic, never with a tool.

| rule | its one address |
|---|---|
| naming an engine at all: an identifier such as `vllm_schedule` or `SglangProfile`, a string whose first word is an engine's kind (`"trtllm"`, `"sglang speculative_adaptive_config"`, `case "vllm"`) | the engines' own packages (`exporter/engines/<engine>/`, `gate/model/engines/<engine>/`) and the two registries (`exporter/engines/__init__.py ADAPTERS`, `gate/model/engines/__init__.py PROFILES`) |

A check importing a tool (`gate.probe`, `gate.tune`) is the contract `checks-fetch-nothing` in .importlinter
(tests/test_layering.py): the checks import floor 0 (`gate.model.speedup`, `gate.stats`, `gate.status`).

The engines are the registry's, never a list of this file's own, so a fifth engine is seen here the day it
is registered. The scan reads the syntax tree: docstrings and comments (which explain) never count, and
prose, which spells an engine's name ("vLLM: draft tokens per round", "SGLang's gauge"), is left alone.
Tests, fixtures, docs and the chart are outside `exporter/` and `gate/` and not scanned (the chart's enum
is held to the registry by tests/helm/test_engine_enum.py).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from exporter.engines import ADAPTERS, ENGINE_KINDS, EngineKind
from gate.model.engines import PROFILES

REPO = Path(__file__).resolve().parents[1]
ENGINES = frozenset(ADAPTERS)
# Where an engine may be named: its own packages, the two registries (`ADAPTERS` and beside it `EngineKind`, its
# typing spelling, held equal to it by test_the_engine_lists_are_one below), and
# - gate/probe/importers/: the result files of benchmark clients, one of which is named `vllm bench` (a
#   client any engine's run can produce; no engine fact is read there).
OWNERS: tuple[str, ...] = (
    *(f"exporter/engines/{k}/" for k in sorted(ENGINES)),
    *(f"gate/model/engines/{k}/" for k in sorted(ENGINES)),
    "exporter/engines/__init__.py", "gate/model/engines/__init__.py",
    "gate/probe/importers/",
)
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _names_engine(identifier: str) -> bool:
    """An identifier whose words (snake_case or CamelCase) include an engine's kind: `vllm_schedule`,
    `SglangAdapter`, `_TRTLLM_LAST_KEY`."""
    return any(w.lower() in ENGINES for w in _WORDS.findall(identifier))


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def _identifiers(n: ast.AST) -> list[str]:
    if isinstance(n, ast.Name):
        return [n.id]
    if isinstance(n, ast.Attribute):
        return [n.attr]
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [n.name]
    if isinstance(n, ast.arg):
        return [n.arg]
    if isinstance(n, ast.keyword) and n.arg:
        return [n.arg]
    if isinstance(n, ast.alias):
        return [*n.name.split("."), *([n.asname] if n.asname else [])]
    if isinstance(n, ast.ImportFrom) and n.module:
        return n.module.split(".")
    return []


def engine_named(tree: ast.AST) -> Iterator[int]:
    """Lines naming an engine: an identifier holding its kind, or a string whose first word is its kind
    spelled as the registry spells it (kinds are lower case; prose spells "vLLM", "SGLang")."""
    docs = _docstrings(tree)
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            first = re.match(r"[A-Za-z0-9]+", n.value)
            if first and first.group() in ENGINES:
                yield getattr(n, "lineno", 0)
        elif any(_names_engine(i) for i in _identifiers(n)):
            yield getattr(n, "lineno", 0)


def _owned(rel: str) -> bool:
    return any(rel == o or (o.endswith("/") and rel.startswith(o)) for o in OWNERS)


def offenders(root: Path = REPO) -> list[str]:
    """`file:line` of every engine named outside its packages, in the tree at `root`."""
    out = []
    for p in sorted(p for top in ("exporter", "gate") for p in (root / top).rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if not _owned(rel):
            out += [f"{rel}:{line}" for line in sorted(set(engine_named(ast.parse(p.read_text("utf-8"), rel))))]
    return out


def test_no_engine_is_named_outside_its_packages() -> None:
    assert offenders() == []


@pytest.mark.parametrize("code", [
    "x = kind == 'trtllm'\n", "W = {'llamacpp': f}\n", "SOURCE = 'sglang speculative_adaptive_config'\n",
    "from exporter.engines.sglang.depth import depth\n", "from exporter.engines import vllm\n",
    "import exporter.engines.llamacpp\n", "def vllm_schedule(r):\n    pass\n", "class SglangThing:\n    pass\n",
    "X = TRTLLM_LAST_KEY\n", "f(llamacpp_body=1)\n", "y = m.sglang_rate\n", "def f(vllm_args):\n    pass\n",
    "match kind:\n    case 'vllm':\n        pass\n", "p = f'vllm:{name}'\n",
])
def test_the_rule_sees_an_engine_named(code: str) -> None:
    assert list(engine_named(ast.parse(code)))


def test_the_rule_lets_prose_and_docstrings_be() -> None:
    code = ('"""vllm and sglang: k rules"""\nhelp = "SGLang: serving engine (default vLLM)"\nprefill = 1\n'
            'def f():\n    """trtllm reads draft_len_schedule"""\n    return "TensorRT-LLM"\n')
    assert not list(engine_named(ast.parse(code)))


def test_the_engine_lists_are_one() -> None:
    """`ADAPTERS` is the one engine list: the profiles and `EngineKind` (hence `ENGINE_KINDS`, every `--engine`
    choice, the plan's and the probe record's engine) say the same engines in the same order."""
    assert tuple(ADAPTERS) == tuple(PROFILES) == ENGINE_KINDS == get_args(EngineKind)
