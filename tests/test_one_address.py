"""Every rule at one address (design.md "One address per rule"): a copy elsewhere fails here, with its file and line.

| rule | its one address |
|---|---|
| the acceptance length `1 + accepted / drafts` (and `1 + Σ p_i`), L again as `(d + a) / d` | `exporter/formulas.py` |
| the depth k: `num_draft_tokens ± 1`, `len(accepted_per_position)` | the engine packages (`exporter/engines/`, `gate/model/engines/`) |
| a literal set of two or more speculative methods (`gate.model.depth.METHODS`) | `gate/model/depth.py`, the engine packages |
| exit codes (`EXIT_*`; no bare `return 3`, `sys.exit(3)` or `SystemExit(2)`) | `exporter/exits.py`, `gate/status.py` |
| the order of statuses: three or more `Status` members in any container, a tuple included | `gate/status.py` |
| reading a file (`read_bytes`, `read_text`, `open(` for reading, `io.FileIO`, `os.open`, `os.fdopen`) | `gate/inputs/`, the exporter's capture readers |
| a status set by a source (`Status` named anywhere in `gate/evidence/`: sources return facts) | never in `gate/evidence/` |
| a drafter config's block keys read (`.get("block_size")`, `["dspark_block_size"]`): their order, `dflash_config`'s first | `gate/model/engines/base.py` (`drafter_block_size`, `BlockKeys`) |
| a block's round `block ± 1` (DFlash drafts block − 1, SGLang's DSpark block + 1) | the engine packages; in llama.cpp's, `block_round` alone |

The engine-name rule is tests/test_engines_as_folders.py's; the import rules are the contracts in .importlinter
(tests/test_layering.py). The lists come from the code: the methods from `gate.model.depth.METHODS`, the statuses
from `gate.status.Status`. The scan reads the syntax tree, so docstrings and comments (which explain the rules)
never count. `offenders(rule, root)` scans any copy of the tree (tests/test_guards_bite.py plants in one).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gate.model.depth import METHODS
from gate.status import Status

REPO = Path(__file__).resolve().parents[1]
READ_CALLS = frozenset({"read_bytes", "read_text"})
OPENERS = frozenset({"FileIO", "fdopen"})  # io.FileIO(p), os.fdopen(fd): a file opened without open()
ENGINE_PACKAGES = ("exporter/engines/", "gate/model/engines/")
STATUS = Status.__name__


def sources(root: Path = REPO) -> list[Path]:
    return sorted(p for top in ("exporter", "gate") for p in (root / top).rglob("*.py"))


def _owned(rel: str, owners: tuple[str, ...]) -> bool:
    return any(rel == o or (o.endswith("/") and rel.startswith(o)) for o in owners)


def _const_one(n: ast.expr) -> bool:
    return isinstance(n, ast.Constant) and not isinstance(n.value, bool) and n.value in (1, 1.0)


_PLAIN = (ast.Name, ast.Attribute, ast.Subscript, ast.Call)  # counts, not arithmetic (Wilson's (n + z²) / n)


def _same(a: ast.expr, b: ast.expr) -> bool:
    return ast.dump(a) == ast.dump(b)


def length_rule(tree: ast.AST) -> Iterator[int]:
    """`1 + x / y`, `1 + sum(...)`, or `(d + a) / d` (L = (drafts + accepted) / drafts): the acceptance length
    written again."""
    for n in ast.walk(tree):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            for one, other in ((n.left, n.right), (n.right, n.left)):
                if _const_one(one) and (
                        (isinstance(other, ast.BinOp) and isinstance(other.op, ast.Div))
                        or (isinstance(other, ast.Call) and isinstance(other.func, ast.Name)
                            and other.func.id in ("sum", "fsum"))):
                    yield n.lineno
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and isinstance(n.left, ast.BinOp) \
                and isinstance(n.left.op, ast.Add) and all(isinstance(x, _PLAIN) for x in (n.left.left, n.left.right)) \
                and (_same(n.left.left, n.right) or _same(n.left.right, n.right)):
            yield n.lineno


def _named(n: ast.expr, name: str) -> bool:
    """`name`, `x.name`, or either wrapped in a call (`int(sp.name)`)."""
    if isinstance(n, ast.Call) and len(n.args) == 1:
        n = n.args[0]
    return (isinstance(n, ast.Name) and n.id == name) or (isinstance(n, ast.Attribute) and n.attr == name)


def _counts_positions(n: ast.expr) -> bool:
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1 \
        and _named(n.args[0], "accepted_per_position")


def depth_rule(tree: ast.AST) -> Iterator[int]:
    """The depth k derived again: SGLang's `num_draft_tokens - 1` (or `+ 1` back), or vLLM's count of
    per-position series `len(accepted_per_position)` taken as a value (assigned, returned or passed on; comparing
    two windows' series counts, or growing a sum to one, reads no k)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)) and (
                (_named(n.left, "num_draft_tokens") and _const_one(n.right))
                or (_named(n.right, "num_draft_tokens") and _const_one(n.left))):
            yield n.lineno
        elif isinstance(n, (ast.Assign, ast.AnnAssign, ast.Return, ast.Call, ast.keyword)):
            values = n.args if isinstance(n, ast.Call) else [n.value] if n.value is not None else []
            yield from (v.lineno for v in values if _counts_positions(v))


def _strings(n: ast.AST) -> set[object]:
    if isinstance(n, (ast.Set, ast.Tuple, ast.List)):
        return {e.value for e in n.elts if isinstance(e, ast.Constant)}
    if isinstance(n, ast.Dict):
        return {k.value for k in n.keys if isinstance(k, ast.Constant)}
    return set()


def method_set_rule(tree: ast.AST) -> Iterator[int]:
    """A literal collection of two or more speculative methods (`gate.model.depth.METHODS`): a method set
    written again (drafterless, embedded, block, or a new one that belongs beside them)."""
    for n in ast.walk(tree):
        if len(_strings(n) & set(METHODS)) >= 2:
            yield n.lineno


def _exit_int(n: ast.expr | None) -> bool:
    return isinstance(n, ast.Constant) and type(n.value) is int and n.value != 0


def exit_code_rule(tree: ast.AST) -> Iterator[int]:
    """`EXIT_… = n` defined again, a command (`run`, `main`) returning a bare 1, 2 or 3, `sys.exit(3)`, or
    `SystemExit(2)`."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id.startswith("EXIT_")
                                             for t in n.targets) and isinstance(n.value, ast.Constant):
            yield n.lineno
        elif isinstance(n, ast.Call) and n.args and _exit_int(n.args[0]) and (
                (isinstance(n.func, ast.Attribute) and n.func.attr == "exit")
                or (isinstance(n.func, ast.Name) and n.func.id == "SystemExit")):
            yield n.lineno
        elif isinstance(n, ast.FunctionDef) and n.name in ("run", "main"):
            yield from (r.lineno for r in ast.walk(n) if isinstance(r, ast.Return) and isinstance(r.value, ast.Constant)
                        and type(r.value.value) is int and r.value.value in (1, 2, 3))


def _status_member(k: ast.expr | None) -> bool:
    return isinstance(k, ast.Attribute) and isinstance(k.value, ast.Name) and k.value.id == STATUS \
        and k.attr in Status.__members__


def status_order_rule(tree: ast.AST) -> Iterator[int]:
    """A ranking of statuses written again: a dict, list or tuple naming three or more `Status` members. A set
    (`{…}`, `frozenset({…})`) has no order, nor has the tuple of a membership test (`s in (…)`)."""
    tested = {id(c) for n in ast.walk(tree) if isinstance(n, ast.Compare)
              for op, c in zip(n.ops, n.comparators, strict=True) if isinstance(op, (ast.In, ast.NotIn))}
    for n in ast.walk(tree):
        if id(n) in tested:
            continue
        items = n.keys if isinstance(n, ast.Dict) else n.elts if isinstance(n, (ast.List, ast.Tuple)) else []
        if sum(map(_status_member, items)) >= 3:
            yield n.lineno


def _reads(call: ast.Call) -> bool:
    """`open(path)` or `open(path, "r…")` (writing a file is not reading one)."""
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return mode is None or (isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "r" in mode.value)


def _os_reads(call: ast.Call) -> bool:
    """`os.open(path, flags)` unless the flags say write only (`O_WRONLY`)."""
    flags = call.args[1] if len(call.args) > 1 else None
    return flags is None or not any(isinstance(x, ast.Attribute) and x.attr == "O_WRONLY" for x in ast.walk(flags))


def file_read_rule(tree: ast.AST) -> Iterator[int]:
    """A file read by any API: `p.read_text()`, `p.read_bytes()`, `open(p)`, `p.open()`, `io.FileIO(p)`,
    `os.fdopen(fd)`, `os.open(p, os.O_RDONLY)` (the bare `read_text(p, what, limit)` is gate.inputs' reader)."""
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        os_call = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "os"
        if (isinstance(f, ast.Attribute) and name in READ_CALLS) or name in OPENERS:
            yield n.lineno
        elif name == "open" and (_os_reads(n) if os_call else _reads(n)):
            yield n.lineno


def verdict_rule(tree: ast.AST) -> Iterator[int]:
    """`Status` named in a source (imported, returned, compared): the evidence would be judging."""
    for n in ast.walk(tree):
        if (isinstance(n, ast.Name) and n.id == STATUS) or (isinstance(n, ast.Attribute) and n.attr == STATUS) \
                or (isinstance(n, ast.alias) and n.name == STATUS):
            yield getattr(n, "lineno", 0)


# The keys a block drafter's config.json gives its block in; the exporter's `block_size` is another one, vLLM's KV
# page (a `cache_config_info` label), so the rule is checked in the gate only.
BLOCK_KEYS = frozenset({"block_size", "dspark_block_size"})
BLOCK_NAMES = ("block_size", "dspark_block_size", "block", "bs")


def _block_key(n: ast.expr | None) -> bool:
    return isinstance(n, ast.Constant) and n.value in BLOCK_KEYS


def block_keys_rule(tree: ast.AST) -> Iterator[int]:
    """A block key read from a mapping (`d.get("block_size", …)`, `d.pop(…)`, `d["dspark_block_size"]`,
    `"block_size" in d`): `drafter_block_size`'s order (dflash_config.block_size before the top-level block_size,
    as SGLang reads it) written again, where it can drift (init once read the top-level key first)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "pop") \
                and n.args and _block_key(n.args[0]):
            yield n.lineno
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and _block_key(n.slice):
            yield n.lineno
        elif isinstance(n, ast.Compare) and _block_key(n.left) and isinstance(n.ops[0], (ast.In, ast.NotIn)):
            yield n.lineno


def _outside(tree: ast.AST, function: str) -> Iterator[ast.AST]:
    """`ast.walk(tree)` without the bodies of the functions named `function`."""
    todo = [tree]
    while todo:
        n = todo.pop()
        yield n
        if not (isinstance(n, ast.FunctionDef) and n.name == function):
            todo.extend(ast.iter_child_nodes(n))


def block_round_rule(tree: ast.AST) -> Iterator[int]:
    """A block's round derived again: `block_size - 1` (DFlash's drafts), `block + 1` (SGLang's DSpark draft
    tokens), `bs - 1`. Each engine's block arithmetic is its profile's; llama.cpp's is `block_round` alone (its
    `block_rule`, `block_depth_keys` and the oracle replay ask it), so the llama.cpp package is scanned outside it."""
    for n in _outside(tree, "block_round"):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)) and any(
                any(_named(a, name) for name in BLOCK_NAMES) and _const_one(b)
                for a, b in ((n.left, n.right), (n.right, n.left))):
            yield n.lineno


# rule -> (scan, where it may live, where it is checked: None for everywhere else)
Rule = tuple[Callable[[ast.AST], Iterator[int]], tuple[str, ...], tuple[str, ...] | None]
RULES: dict[str, Rule] = {
    "acceptance length": (length_rule, ("exporter/formulas.py",), None),
    # gate/evidence/positions.py counts the per-position series a window carries (PositionCounters.k, checked
    # against the engine's k by gate.model.speedup.counters), it does not derive the engine's depth.
    "depth k": (depth_rule, (*ENGINE_PACKAGES, "gate/evidence/positions.py"), None),
    # gate/model/config.py reads a drafter's family (`drafter_family`, `HYBRID_TAP_FAMILIES`), and identity.py and
    # plan/init.py map methods to families and back: a family is spelled like the method it serves.
    "method sets": (method_set_rule, ("gate/model/depth.py", *ENGINE_PACKAGES, "gate/model/config.py",
                                      "gate/model/identity.py", "gate/plan/init.py"), None),
    "exit codes": (exit_code_rule, ("exporter/exits.py", "gate/status.py"), None),
    "status order": (status_order_rule, ("gate/status.py",), None),
    # gate/inputs/ reads every file a user hands the gate; the exporter reads its own captures (replay,
    # `exporter once --file`); gate/plan/reference.py is `make plan-reference`'s writer, reading the
    # generated files it compares (a developer tool, no user input).
    "file reads": (file_read_rule, ("gate/inputs/", "exporter/scrape.py", "exporter/replay.py",
                                    "gate/plan/reference.py"), None),
    "sources never judge": (verdict_rule, (), ("gate/evidence/",)),
    "block keys": (block_keys_rule, ("gate/model/engines/base.py",), ("gate/",)),
    "block round": (block_round_rule, ("exporter/engines/", "gate/model/engines/vllm/", "gate/model/engines/sglang/",
                                       "gate/model/engines/trtllm/"), None),
}


def offenders(rule: str, root: Path = REPO) -> list[str]:
    """`file:line` of every copy of the rule outside its address, in the tree at `root`."""
    check, owners, scope = RULES[rule]
    out = []
    for p in sources(root):
        rel = p.relative_to(root).as_posix()
        if _owned(rel, owners) or (scope is not None and not _owned(rel, scope)):
            continue
        out += [f"{rel}:{line}" for line in check(ast.parse(p.read_text(encoding="utf-8"), rel))]
    return sorted(set(out))


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_lives_at_one_address(rule: str) -> None:
    assert offenders(rule) == []


@pytest.mark.parametrize(("rule", "code"), [
    ("acceptance length", "L = 1.0 + accepted / drafts\n"),
    ("acceptance length", "L = 1 + sum(p)\n"),
    ("acceptance length", "L = (d + a) / d\n"),
    ("depth k", "k = int(sp.num_draft_tokens) - 1\n"),
    ("depth k", "k = len(s.accepted_per_position)\n"),
    ("method sets", "X = frozenset({'suffix', 'ngram'})\n"),
    ("method sets", "X = ('eagle', 'eagle3')\n"),
    ("exit codes", "EXIT_INVALID = 3\n"),
    ("exit codes", "def run():\n    return 3\n"),
    ("exit codes", "import sys\nsys.exit(2)\n"),
    ("exit codes", "raise SystemExit(2)\n"),
    ("file reads", "p.read_text()\n"),
    ("file reads", "open(p)\n"),
    ("file reads", "io.FileIO(p).readall()\n"),
    ("file reads", "os.open(p, os.O_RDONLY)\n"),
    ("status order", "R = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}\n"),
    ("status order", "R = (Status.FAIL, Status.INCONCLUSIVE, Status.WARN, Status.PASS)\n"),
    ("sources never judge", "def f():\n    return Status.FAIL\n"),
    ("block keys", "bs = d.get('block_size', d.get('dflash_config', {}).get('block_size'))\n"),
    ("block keys", "g = cfg['dspark_block_size']\n"),
    ("block keys", "if 'block_size' in d:\n    pass\n"),
    ("block round", "k = block_size - 1\n"),
    ("block round", "n = 1 + keys.block\n"),
    ("block round", "k = bs - 1 if family == 'dflash' else bs\n"),
])
def test_each_rule_sees_a_copy(rule: str, code: str) -> None:
    assert list(RULES[rule][0](ast.parse(code)))


@pytest.mark.parametrize(("rule", "code"), [
    ("acceptance length", "'''L = 1 + accepted / drafts'''\nx = 1 + y\n(a + b) / c\n"),
    ("depth k", "k = num_speculative_tokens - 1\nn = len(positions)\n"),
    ("method sets", "if method == 'eagle':\n    pass\nX = ('eagle', 'tokens')\n"),
    ("file reads", "open(p, 'w')\np.write_text(s)\n"),
    ("exit codes", "def run():\n    return 0\n"),
    ("exit codes", "def p_value():\n    return 1.0\n"),
    ("exit codes", "raise SystemExit(0)\n"),
    ("status order", "if s in (Status.FAIL, Status.INCONCLUSIVE, Status.WARN):\n    pass\n"),
    ("status order", "P = frozenset({Status.PASS, Status.NA, Status.WARN})\n"),
    ("depth k", "if len(a.accepted_per_position) == len(b.accepted_per_position):\n    pass\n"),
    ("file reads", "read_text(p, 'plan', 1 << 20)\nos.open(p, os.O_WRONLY | os.O_CREAT)\n"),
    ("block keys", "bs = drafter_block_size(d)\nrow = {'block_size': bs}\nd['block_size'] = 4\n"),
    ("block round", "pages = (tokens + block_size - 1) // block_size\nk = block_size\n"),
    ("block round", "def block_round(family, block_size, depth):\n    return block_size - 1\n"),
])
def test_each_rule_lets_the_rest_be(rule: str, code: str) -> None:
    assert not list(RULES[rule][0](ast.parse(code)))
