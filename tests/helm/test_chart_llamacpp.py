"""The chart runs a llama.cpp engine (`engine.kind: llamacpp`) with the exporter sidecar (issue 25).

Expected flags are llama-server b11434's (common/arg.cpp): `--metrics` serves /metrics (off by default),
an explicit `--parallel` splits `--ctx-size` per slot (the exporter's pool = n_ctx per slot x slots from
/props), `--alias` is the served name, `--spec-<key>` the speculative flags, `LLAMA_API_KEY` the key.
"""

from __future__ import annotations

from pathlib import Path

from tests.helm.render import (
    FULLNAME,
    Rendered,
    container,
    default_values,
    env_of,
    parse_objects,
    template,
    write_values,
)
from tests.helm.test_helm_objects import engine


def test_llamacpp_engine_args(rendered: dict[tuple[str, bool], Rendered]) -> None:
    dep = engine(rendered[("llamacpp", False)])
    c = container(dep, "engine")
    assert c["image"] == "ghcr.io/ggml-org/llama.cpp:server-b11434"
    assert c["command"] == ["/app/llama-server"]
    assert c["args"] == [
        "--model", "/models/target.gguf", "--host", "0.0.0.0", "--port", "8080", "--metrics",
        "--parallel", "4", "--ctx-size", "2048",  # maxModelLen 512 is one slot's context: 512 x 4 slots
        "--alias", "tiny",
        # range over a map is sorted by key
        "--spec-draft-model", "/models/draft.gguf", "--spec-draft-n-max", "3", "--spec-type", "draft-simple",
    ]
    assert not any(k.endswith("API_KEY") for k in env_of(c))  # no key asked for
    assert dep["spec"]["template"]["metadata"]["annotations"]["specgate.io/engine"] == "llamacpp"
    exporter = container(dep, "exporter")
    assert env_of(exporter)["SPECGATE_ENGINE"]["value"] == "llamacpp"  # the exporter's settings take it
    assert "--engine-url" in exporter["args"] and "http://127.0.0.1:8080" in exporter["args"]


def test_explicit_ctx_size_and_no_tensor_parallel(helm: Path, tmp_path: Path) -> None:
    eng = {"kind": "llamacpp", "model": "/m.gguf", "llamacpp": {"parallel": 2, "ctxSize": 8192}}
    values = {"engine": eng, "gate": {"hook": {"enabled": False}}}
    out = template(helm, write_values(tmp_path, values), api=False)
    assert out.returncode == 0, out.stderr
    dep = Rendered("llamacpp-ctx", False, values, parse_objects(out.stdout)).one("Deployment", FULLNAME)
    args = container(dep, "engine")["args"]
    assert args[args.index("--parallel") + 1] == "2" and args[args.index("--ctx-size") + 1] == "8192"
    values["engine"] = {**eng, "tensorParallelSize": 2}
    bad = template(helm, write_values(tmp_path, values), api=False)
    assert bad.returncode != 0 and "tensorParallelSize" in bad.stderr


def test_api_key_from_the_secret_as_llama_api_key(helm: Path, tmp_path: Path) -> None:
    # llama-server reads --api-key from LLAMA_API_KEY (common/arg.cpp set_env): never on the command line
    values = {"engine": {"kind": "llamacpp", "model": "/m.gguf", "apiKey": {"existingSecret": "engine-key",
                                                                             "key": "api-key"}},
              "gate": {"hook": {"enabled": False}}}
    out = template(helm, write_values(tmp_path, values), api=False)
    assert out.returncode == 0, out.stderr
    dep = Rendered("llamacpp-key", False, values, parse_objects(out.stdout)).one("Deployment", FULLNAME)
    c = container(dep, "engine")
    env = env_of(c)
    assert env["LLAMA_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "engine-key", "key": "api-key"}
    assert "VLLM_API_KEY" not in env and not any("api-key" in a for a in c["args"])
    assert env_of(container(dep, "exporter"))["SPECGATE_ENGINE_API_KEY"]["valueFrom"]["secretKeyRef"]["name"] == \
        "engine-key"


def test_default_values_name_the_llamacpp_image() -> None:
    img = default_values()["engine"]["images"]["llamacpp"]
    assert (img["repository"], img["tag"]) == ("ghcr.io/ggml-org/llama.cpp", "server-b11434")
