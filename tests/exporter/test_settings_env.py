"""The sidecar's settings from the environment, as pydantic-settings read them before (issue 40: the sidecar no
longer imports it, nor the asyncio and ssl it brought, ~4 MiB of the soak's RSS).

Flags over `SPECGATE_<NAME>` (any case) over defaults; a value from the environment is a string pydantic converts;
a bad one names its setting in one line."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from exporter.settings import ExporterSettings, add_run_arguments, settings_from_args


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return parser.parse_args(list(argv))


def test_environment_over_defaults_and_flags_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECGATE_SCRAPE_INTERVAL", "2s")
    monkeypatch.setenv("SPECGATE_WINDOWS", "30s,1m,60s")
    monkeypatch.setenv("specgate_min_drafts", "7")  # any case, as pydantic-settings matched names
    monkeypatch.setenv("SPECGATE_POSITION_GAUGES", "false")
    monkeypatch.setenv("SPECGATE_ENGINE_API_KEY", "k3y")
    monkeypatch.setenv("SPECGATE_NOT_A_SETTING", "ignored")
    s = settings_from_args(_args("--scrape-interval", "3s"))
    assert s.scrape_interval == 3.0  # the flag
    assert s.windows == [30.0, 60.0] and s.min_drafts == 7 and s.position_gauges is False
    assert s.engine_api_key is not None and s.engine_api_key.get_secret_value() == "k3y"
    assert s.scrape_timeout == 4.0 and s.acceptance_slo_target is None  # defaults
    assert ExporterSettings(min_drafts=3).min_drafts == 3  # a value given beats the environment


def test_defaults_without_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ExporterSettings.model_fields:
        monkeypatch.delenv(f"SPECGATE_{name.upper()}", raising=False)
    s = ExporterSettings()
    assert (s.windows, s.listen, s.engine, s.engine_api_key) == ([60.0, 300.0], "127.0.0.1:9479", "auto", None)


@pytest.mark.parametrize(("name", "value", "said"), [
    ("SPECGATE_SCRAPE_TIMEOUT", "soon", "--scrape-timeout / SPECGATE_SCRAPE_TIMEOUT: not a duration"),
    ("SPECGATE_WINDOWS", "0s", "--windows / SPECGATE_WINDOWS: every window must be longer than 0s"),
    ("SPECGATE_MAX_STREAMS", "many", "--max-streams / SPECGATE_MAX_STREAMS:"),
    ("SPECGATE_ACCEPTANCE_SLO_TARGET", "", "--acceptance-slo-target / SPECGATE_ACCEPTANCE_SLO_TARGET:"),
    ("SPECGATE_ENGINE", "ollama", "--engine / SPECGATE_ENGINE:"),
])
def test_a_bad_value_from_the_environment_names_its_setting(monkeypatch: pytest.MonkeyPatch, name: str, value: str,
                                                            said: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as e:
        settings_from_args(_args())
    assert str(e.value).startswith("invalid setting: " + said) and "\n" not in str(e.value)


def test_the_scrape_path_imports_neither_asyncio_nor_ssl() -> None:
    """pydantic-settings imported asyncio and with it ssl (~4.4 MiB of OpenSSL); ssl comes in for an https engine
    only (`exporter.scrape.tls_context`)."""
    code = ("import sys\nimport exporter.state, exporter.collect, exporter.scrape, exporter.cli\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('ssl', 'asyncio', 'pydantic_settings'))\n"
            "assert not bad, bad\n"
            "import exporter.scrape as s\nassert s.tls_context().sslsocket_class.__name__ == '_DeadlineSSLSocket'\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
