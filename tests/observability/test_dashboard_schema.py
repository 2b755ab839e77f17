"""dashboards/specgate.json type-checked against Grafana's own dashboard schema types: npm `@grafana/schema`
(`raw/dashboard/x/types.gen.d.ts`, generated from Grafana's CUE schema) with typescript's `tsc --strict`, both
pinned in tools/npm (installed by tools/install_npm.sh). No Grafana server exists on any registry here; this is
the schema Grafana itself is built from. Its 8 TypeScript enums (numbers and strings in JSON) are turned into
literal unions of their values, so the JSON's plain values type-check; nothing else is changed."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.observability.sources import DASHBOARD, REPO

NPM = REPO / ".tools" / "npm"
TSC = NPM / "node_modules" / ".bin" / "tsc"
TYPES = NPM / "node_modules" / "@grafana" / "schema" / "dist" / "types" / "raw" / "dashboard" / "x" / "types.gen.d.ts"
SCHEMA_VERSION = "13.2.3"

_ENUM = re.compile(r"export declare enum (\w+) \{(.*?)\n\}", re.S)


def literal_unions(d_ts: str) -> tuple[str, int]:
    """`export declare enum X { a = 0, b = 'x' }` -> `export type X = (0 | 'x');`, and every use of a member
    (`X.b`) -> its value `'x'`. Returns the text and how many enums were converted."""
    members: dict[str, str] = {}

    def repl(m: re.Match) -> str:
        pairs = [[x.strip() for x in v.split("=", 1)] for v in m.group(2).split(",") if "=" in v]
        members.update({f"{m.group(1)}.{k}": val for k, val in pairs})
        return f"export type {m.group(1)} = ({' | '.join(val for _, val in pairs)});"

    text, n = _ENUM.subn(repl, d_ts)
    for ref, val in members.items():
        text = re.sub(rf"\b{re.escape(ref)}\b", val, text)
    return text, n


@pytest.fixture(scope="module")
def tsc() -> Path:
    if not TSC.exists() or not TYPES.exists():
        pytest.fail("tsc / @grafana/schema missing: run `make tools` (tools/install_npm.sh .tools/bin)")
    version = json.loads((NPM / "node_modules" / "@grafana" / "schema" / "package.json").read_text())["version"]
    assert version == SCHEMA_VERSION
    return TSC


def typecheck(tsc: Path, dashboard: dict, workdir: Path) -> subprocess.CompletedProcess:
    types, n = literal_unions(TYPES.read_text())
    assert n == 8, f"expected Grafana's 8 enums, converted {n}"
    (workdir / "types.ts").write_text(types)
    (workdir / "dashboard.ts").write_text(
        "import type { Dashboard } from './types';\n"
        f"export const dashboard: Dashboard = {json.dumps(dashboard, indent=2)};\n")
    return subprocess.run([str(tsc), "--noEmit", "--strict", "--target", "es2020", "--module", "es2020",
                           "--moduleResolution", "node", "dashboard.ts"],
                          cwd=workdir, capture_output=True, text=True, timeout=180)


def test_dashboard_matches_grafanas_schema_types(tsc: Path, tmp_path: Path) -> None:
    out = typecheck(tsc, json.loads(DASHBOARD.read_text()), tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_typecheck_rejects_what_the_schema_does_not_define(tsc: Path, tmp_path: Path) -> None:
    """The check is only worth something if it can fail: unknown variable keys (what the generator used to
    emit), a wrong gridPos type and a wrong refresh value are each reported."""
    d = json.loads(DASHBOARD.read_text())
    d["templating"]["list"][1]["auto_count"] = 30
    d["panels"][1]["gridPos"]["w"] = "12"
    d["templating"]["list"][2]["refresh"] = 7
    out = typecheck(tsc, d, tmp_path)
    assert out.returncode != 0
    assert "auto_count" in out.stdout
    assert re.search(r"Type 'string' is not assignable to type 'number'", out.stdout), out.stdout
    assert "Type '7' is not assignable to type 'VariableRefresh" in out.stdout, out.stdout
