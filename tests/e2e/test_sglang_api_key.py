"""The chart's SGLang API key path on the real parts: the engine-api-key init container's exact command (from
the chart as the pinned helm renders it) writes the --config file, and SGLang 0.5.23's own argument handling
(`prepare_server_args`: its argparse parser plus `ConfigArgumentMerger`, sglang/srt/server_args.py and
sglang/srt/utils/server_args_config_parser.py) reads it back into `server_args.api_key`.

No model is loaded and no server started: `prepare_server_args` parses and builds the raw ServerArgs record
only (resolution, which looks at the model and the device, runs later, in `run_server`). Both the writer and
the reader run on the SGLang venv's python and its PyYAML, as in the engine image.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from harness import _engine_env

from tests.helm.render import (
    AWKWARD_KEYS,
    CASES,
    ENGINE_KEY_INIT,
    FULLNAME,
    INSTALL_SCRIPT,
    TOOLS_BIN,
    container,
    init_containers,
    parse_objects,
    run_key_writer,
    template,
    write_values,
)

# Runs in the SGLang venv: {"runs": [argv, ...]} on stdin -> per argv, the parsed record's api_key and its
# repr (every field but the watermark secrets), or the parser's exit code.
PARSE = r"""
import contextlib, io, json, sys
from sglang.srt.server_args import prepare_server_args
out = []
for argv in json.load(sys.stdin)["runs"]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            a = prepare_server_args(argv)
    except SystemExit as e:
        out.append({"exit": e.code, "stderr": err.getvalue()[-400:]})
    else:
        out.append({"api_key": a.api_key, "repr": repr(a)})
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def sglang_engine(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The SGLang engine Deployment of the chart's `sglang` values case (an API key from a Secret)."""
    proc = subprocess.run(["bash", str(INSTALL_SCRIPT), str(TOOLS_BIN)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    rendered = template(TOOLS_BIN / "helm", write_values(tmp_path_factory.mktemp("values"), CASES["sglang"]),
                        api=False)
    assert rendered.returncode == 0, rendered.stderr
    (dep,) = [o for o in parse_objects(rendered.stdout)
              if o["kind"] == "Deployment" and o["metadata"]["name"] == FULLNAME]
    return dep


def parse(sglang_python: Path, runs: list[list[str]]) -> list[dict]:
    proc = subprocess.run([str(sglang_python), "-c", PARSE], input=json.dumps({"runs": runs}), capture_output=True,
                          text=True, timeout=300, env=_engine_env(), check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert proc.returncode == 0 and line, proc.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def test_sglang_reads_the_init_containers_file_as_its_api_key(sglang_python: Path, sglang_engine: dict,
                                                             tmp_path: Path) -> None:
    """For each awkward key: the rendered engine args with `--config <the file the init container wrote>`
    give the same ServerArgs as the old command line `... --api-key KEY` did, api_key == the key exactly."""
    (init,) = [c for c in init_containers(sglang_engine) if c["name"] == ENGINE_KEY_INIT]
    args = container(sglang_engine, "engine")["args"]
    at = args.index("--config")
    assert "--api-key" not in args
    runs: list[list[str]] = []
    for n, key in enumerate(AWKWARD_KEYS):
        cfg = tmp_path / f"k{n}" / "config.yaml"
        cfg.parent.mkdir()
        proc = run_key_writer(init, key, cfg, python=str(sglang_python))
        assert proc.returncode == 0, proc.stderr
        with_file = [*args[:at], "--config", str(cfg), *args[at + 2:]]
        on_the_command_line = [*args[:at], *args[at + 2:], "--api-key", key]
        runs += [with_file, on_the_command_line]
    results = parse(sglang_python, runs)
    for n, key in enumerate(AWKWARD_KEYS):
        from_file, from_argv = results[2 * n], results[2 * n + 1]
        assert from_file.get("api_key") == key, (key, from_file)
        assert from_file["repr"] == from_argv["repr"], key  # the other rendered flags parse as before
    assert "model_path='meta-llama/Llama-3.1-8B-Instruct'" in results[0]["repr"]
    assert "speculative_algorithm='EAGLE3'" in results[0]["repr"]


def test_sglangs_parser_cannot_take_the_keys_the_init_container_refuses(sglang_python: Path) -> None:
    """Why the init container stops on an empty key and on one starting with "-": SGLang takes "" as a key
    (and with api_key falsy adds no auth middleware) and reads "-..." as a flag (argparse exits 2)."""
    empty, dashed = parse(sglang_python, [["--model-path", "m", "--api-key", ""],
                                          ["--model-path", "m", "--api-key", "-starts-with-a-dash"]])
    assert empty.get("api_key") == ""
    assert dashed.get("exit") == 2 and "--api-key: expected one argument" in dashed["stderr"]


def test_sglangs_merger_wants_dashes_and_a_yaml_suffix(sglang_python: Path, tmp_path: Path) -> None:
    """The file's shape, pinned against SGLang's merger: it turns each YAML key into `--<key>` verbatim, so
    the key must be spelled `api-key` (`api_key` becomes an unknown `--api_key`), and it refuses a path not
    ending .yaml/.yml."""
    dashed = tmp_path / "dashed.yaml"
    dashed.write_text('"api-key": "k1"\n', encoding="ascii")
    underscored = tmp_path / "underscored.yaml"
    underscored.write_text('"api_key": "k2"\n', encoding="ascii")
    wrong_suffix = tmp_path / "config.txt"
    wrong_suffix.write_text('"api-key": "k3"\n', encoding="ascii")
    proc = subprocess.run(
        [str(sglang_python), "-c",
         "import sys\n"
         "from sglang.srt.server_args import prepare_server_args\n"
         "print('DASHED', prepare_server_args(['--model-path', 'm', '--config', sys.argv[1]]).api_key)\n"
         "try:\n"
         "    prepare_server_args(['--model-path', 'm', '--config', sys.argv[2]])\n"
         "except SystemExit as e:\n"
         "    print('UNDERSCORED exit', e.code)\n"
         "try:\n"
         "    prepare_server_args(['--model-path', 'm', '--config', sys.argv[3]])\n"
         "except ValueError as e:\n"
         "    print('SUFFIX', e)\n",
         str(dashed), str(underscored), str(wrong_suffix)],
        capture_output=True, text=True, timeout=300, env=_engine_env(), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "DASHED k1" in proc.stdout
    assert "UNDERSCORED exit 2" in proc.stdout and "unrecognized arguments: --api_key k2" in proc.stderr
    assert "SUFFIX Config file must be YAML format" in proc.stdout
