"""`specgate check --format json` on every example plan, compared with committed outputs.

Why: a regroup (issue 9) or any refactor must not change a decision, a reason or a number;
this test pins the whole document, not just the statuses (tests/gate/test_examples.py).
Each case runs the real CLI entry point in-process from `examples/plans/` with relative
paths, so the document holds no path of this machine. The only volatile field,
`run_record.generated_at`, is replaced by a placeholder before comparing; everything else
must be byte-identical. The exit code follows from the document's decision and is checked
against it.

A later issue that changes a decision on purpose regenerates the files deliberately and
says so in its commit:

    .venv/bin/python -m tests.gate.verdict.test_check_outputs     # rewrites tests/gate/expected/*.json

then reviews `git diff tests/gate/expected/` line by line.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
from pathlib import Path

import pytest

from gate.cli import main
from tests.gate.helpers import PLANS

EXPECTED = Path(__file__).resolve().parents[1] / "expected"

_CAPTURES = ["captures/seed004-0-start.txt", "captures/seed004-1-after-2k.txt",
             "captures/seed004-2-after-131k.txt"]

# name -> CLI arguments after `specgate check --format json`; every example plan in phase pre,
# and the plan that has committed captures also in phase post with those captures as --metrics.
CASES: dict[str, list[str]] = {p.stem: ["--plan", p.name] for p in sorted(PLANS.glob("*.yaml"))}
CASES["seed004-qwen3.6-35b-a3b-mtp.post"] = ["--plan", "seed004-qwen3.6-35b-a3b-mtp.yaml", "--phase", "post",
                                             "--metrics", *_CAPTURES]

_VOLATILE = re.compile(r'("generated_at": )"[^"]*"')


def _run(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(PLANS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(["check", "--format", "json", *args])
    finally:
        os.chdir(cwd)
    return code, _VOLATILE.sub(r'\1"<generated_at>"', out.getvalue())


_EXIT = {"pass": 0, "fail": 1, "inconclusive": 2}


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_output_unchanged(name: str) -> None:
    path = EXPECTED / f"{name}.json"
    assert path.exists(), f"no committed output for {name}: run python -m tests.gate.verdict.test_check_outputs"
    code, doc = _run(CASES[name])
    assert doc == path.read_text(encoding="utf-8")
    assert code == _EXIT[json.loads(doc)["decision"]]


def test_every_example_plan_has_an_output() -> None:
    assert {p.stem for p in PLANS.glob("*.yaml")} <= set(CASES)


def regenerate() -> None:
    EXPECTED.mkdir(exist_ok=True)
    for name, args in sorted(CASES.items()):
        code, doc = _run(args)
        (EXPECTED / f"{name}.json").write_text(doc, encoding="utf-8")
        print(f"wrote {name}.json (exit {code})", file=sys.stderr)


if __name__ == "__main__":
    regenerate()
