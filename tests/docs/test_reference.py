"""docs/reference/{cli,metrics,exporter}.md are what the code gives now (tools/gen_reference.py, `make reference`).

Why: the README's hand-kept metric table missed 8 of the `specgate_*` families and no test noticed. Each page
is regenerated in memory and compared byte for byte; besides, the generator itself is checked for reach, by
walking the same objects independently: every parser and every option string `specgate` builds is on
cli.md, every `Family` constant of exporter/names.py is in one of its two tuples and on metrics.md, every
exporter setting's flag and environment variable is on exporter.md. The plan's page (docs/reference/plan.md)
has its own drift test, tests/gate/plan/test_reference.py; here only its old address is checked.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from exporter import names
from exporter.settings import ExporterSettings
from gate import cli
from tests.docs._gen import ROOT, generator

gen = generator()


@pytest.mark.parametrize("page,render", [("cli.md", "render_cli"), ("metrics.md", "render_metrics"),
                                         ("exporter.md", "render_exporter")])
def test_committed_page_matches_the_code(page: str, render: str) -> None:
    path = gen.REFERENCE_DIR / page
    assert path.exists(), f"docs/reference/{page} is missing: run `make reference`"
    assert path.read_text(encoding="utf-8") == getattr(gen, render)(), \
        f"docs/reference/{page} differs from the code: run `make reference` and commit it"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                yield from _parsers(sp)


def _section(text: str, prog: str) -> str:
    """cli.md from the heading `prog` to the next heading of the same or a higher level."""
    m = re.search(rf"^(#+) {re.escape(prog)}$", text, re.M)
    assert m is not None, f"no section for `{prog}` in docs/reference/cli.md"
    end = re.search(rf"^#{{1,{len(m.group(1))}}} (?!{re.escape(prog)}:)", text[m.end():], re.M)
    return text[m.end(): m.end() + end.start() if end else len(text)]


def test_every_command_and_option_is_on_cli_md() -> None:
    text = (gen.REFERENCE_DIR / "cli.md").read_text(encoding="utf-8")
    parsers = list(_parsers(cli.build_parser())) + [p for _, p in gen._subcommand_parsers()]
    progs = [p.prog for p in parsers]
    # what the brief of issue 24 names, so a walk that stopped early cannot pass
    for must in ("specgate exporter run", "specgate exporter once", "specgate exporter window", "specgate replay",
                 "specgate probe import", "specgate probe ab", "specgate check", "specgate tune", "specgate serve"):
        assert must in progs
    assert "[`specgate probe ab`](#specgate-probe-ab)" in text
    for p in parsers:
        section = _section(text, p.prog)
        for a in p._actions:
            for opt in a.option_strings:
                if opt not in ("-h", "--help"):
                    assert f"`{opt}`" in section, f"{p.prog} {opt} is not on docs/reference/cli.md"
            if a.help and not isinstance(a, argparse._SubParsersAction | argparse._HelpAction):
                assert gen._cell(gen._help(a, p.prog)) in section, (p.prog, a.dest)
    assert len(parsers) >= 17


def test_every_family_is_in_the_contract_and_on_metrics_md() -> None:
    text = (gen.REFERENCE_DIR / "metrics.md").read_text(encoding="utf-8")
    declared = {v.name for v in vars(names).values() if isinstance(v, names.Family)}
    listed = [f.name for f in (*names.EXPORTER_FAMILIES, *names.GATE_FAMILIES)]
    assert len(listed) == len(set(listed)) and set(listed) == declared, \
        f"Family constants outside EXPORTER_FAMILIES / GATE_FAMILIES: {sorted(declared - set(listed))}"
    assert len(listed) >= 40  # 44 + 2 when this test was written
    for f in (*names.EXPORTER_FAMILIES, *names.GATE_FAMILIES):
        assert f"\n### {f.name}\n" in text and f"[`{f.series}`](#{f.name})" in text, f.name
        assert f.help.strip(), f"{f.name} has no HELP text"
    notes, _ = gen._family_notes()
    # the attribute docstrings reached the page (one of them, with its PromQL fenced)
    assert "```promql\n1 +\n  sum by (namespace, model, engine) (rate(specgate_spec_accepted_tokens_total[5m]))" in text
    assert all(d.splitlines()[0] in text for ds in notes.values() for d in ds)
    for rule in names.RECORDED:
        assert f"- `{rule}`" in text


def test_every_setting_is_on_exporter_md() -> None:
    text = (gen.REFERENCE_DIR / "exporter.md").read_text(encoding="utf-8")
    flags = {n for n, _ in gen._FLAGS}
    for name in ExporterSettings.model_fields:
        row = next((line for line in text.splitlines() if line.startswith("|") and f"`SPECGATE_{name.upper()}`" in line),
                   None)
        assert row is not None, f"SPECGATE_{name.upper()} is not on docs/reference/exporter.md"
        if name in flags:
            assert row.startswith(f"| `--{name.replace('_', '-')}` |"), row
        else:
            assert row.startswith("| (environment only) |"), row  # the engine API key: never a flag
    assert "| (environment only) | `SPECGATE_ENGINE_API_KEY` |" in text


def test_the_old_plan_reference_address_points_at_the_new_one() -> None:
    old = (ROOT / "docs" / "plan-reference.md").read_text(encoding="utf-8")
    assert "(reference/plan.md)" in old and len(old.splitlines()) <= 3
    from gate.plan import reference

    assert reference.REFERENCE == ROOT / "docs" / "reference" / "plan.md"


def test_check_mode_reports_no_drift(capsys: pytest.CaptureFixture[str]) -> None:
    """`python tools/gen_reference.py --check` (what a CI step or a pre-commit hook runs) writes nothing and
    exits 0 on this tree."""
    assert gen.main(["--check"]) == 0
    assert capsys.readouterr().err == ""
