"""The CRD schemas of tests/helm/crds/ (copied verbatim at pinned tags; README.md there says from where) as
strict validators: the chart's rendered operator objects and the examples are checked against them.

Strict like an API server with strict field validation (`kubectl apply --validate=strict`): every object
schema with declared properties refuses others unless the CRD says x-kubernetes-preserve-unknown-fields.
A `.yaml.gz` file is the verbatim CRD gzipped (KServe's InferenceService CRD is 1.9 MB); its pin is the
sha256 of the decompressed text.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CRDS = Path(__file__).resolve().parent / "crds"

# file -> sha256 of its (decompressed) content, as recorded in crds/README.md.
PINNED = {
    "argo-rollouts-v1.9.1-analysis-template-crd.yaml": "96a871705477bb8876f91630789ce753c8291f0ff5457a8cbc781ff150522369",
    "flagger-v1.44.0-crd.yaml": "8d7ad05c2d1d242c0cd4c25c5fb3ad0f75f10706da588aeeb950fe2858134630",
    "prometheus-operator-v0.93.0-podmonitors-crd.yaml":
        "45a93443daa687d3654f7e9631909ff7edcdf3ec09c5e60251b74aa2722aee5d",
    "prometheus-operator-v0.93.0-servicemonitors-crd.yaml":
        "a99047972c9dd7679ce2050b9968e8a08773492e671b3e17abd476d42aa78a32",
    "prometheus-operator-v0.93.0-prometheusrules-crd.yaml":
        "78be98554b9c8506ab2b4f4feb91c5f3a56e536a0a510f3a8e876a459970d56d",
    "grafana-operator-v5.24.0-grafanadashboards-crd.yaml":
        "5f5d94bbe0a01a220cc8ec7b31e98fbdf61677df8a35169572a0efe9057c85b6",
    "kserve-v0.20.0-inferenceservices-crd.yaml.gz": "57c3bf13f77de94678bf2ae3748056ec071ad2b9e88d6a28f44fb4710758fcff",
    "production-stack-vllm-stack-0.1.12-values.schema.json":
        "3dac4e2d1bd64a018e2b1a4fc10990d0d2be7d6599f5764019d2d32424f5a9ae",
}


def content(name: str) -> bytes:
    raw = (CRDS / name).read_bytes()
    return gzip.decompress(raw) if name.endswith(".gz") else raw


def digest(name: str) -> str:
    return hashlib.sha256(content(name)).hexdigest()


def strict(schema: Any) -> Any:
    """An openAPIV3Schema where every object with declared properties refuses others (unless the CRD says
    x-kubernetes-preserve-unknown-fields), like an API server with strict field validation."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out \
            and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def _crd_validators() -> dict[tuple[str, str], jsonschema.Draft7Validator]:
    out = {}
    for name in PINNED:
        if ".yaml" not in name:
            continue
        for crd in yaml.load_all(content(name), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if not crd:
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for v in crd["spec"]["versions"]:
                if v.get("served"):
                    schema = strict(v["schema"]["openAPIV3Schema"])
                    out[(f"{group}/{v['name']}", kind)] = jsonschema.Draft7Validator(schema)
    return out


VALIDATORS = _crd_validators()


def errors(obj: dict[str, Any]) -> list[str]:
    """Every way `obj` breaks its pinned CRD's schema; an AssertionError when no CRD is pinned for it."""
    v = VALIDATORS.get((obj["apiVersion"], obj["kind"]))
    assert v is not None, f"no CRD for {obj['apiVersion']} {obj['kind']}"
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(obj)]
