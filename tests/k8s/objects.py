"""Faithful API objects for the fake API server, shaped as `kubectl get -o json` prints them.

Field names and nesting follow the Kubernetes API reference (apps/v1 Deployment, v1 Pod); the fake adds
`uid`, `resourceVersion`, `creationTimestamp` and `generation` on create, as the API server does.
"""

from __future__ import annotations

from typing import Any

NAMESPACE = "llm"
# A 64-hex digest in the form containerd reports it (`imageID` = repo@sha256:...). Arbitrary test value.
DIGEST = "sha256:5f1c1ef4a1b0f3c9e9b2d1d7a6f4e3c2b1a09f8e7d6c5b4a39281706f5e4d3c2"
IMAGE = "docker.io/vllm/vllm-openai:v0.11.0"
BASE_ARGS = ["--model", "/models/target", "--max-model-len", "32768", "--port", "8000"]


def deployment(name: str = "qwen", *, request: str | None = None, args: list[str] | None = None,
               annotations: dict[str, str] | None = None, gate_label: bool = True) -> dict[str, Any]:
    """An engine Deployment with the exporter sidecar, labelled for the specgate controller."""
    labels = {"app.kubernetes.io/name": "specgate", "app.kubernetes.io/instance": name}
    if gate_label:
        labels["specgate.io/gate"] = "true"
    ann = dict(annotations or {})
    if request is not None:
        ann["specgate.io/drafter-request"] = request
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels, "annotations": ann},
        "spec": {
            "replicas": 1,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app.kubernetes.io/instance": name}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/instance": name}},
                "spec": {
                    "containers": [
                        {"name": "engine", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                         "args": list(BASE_ARGS if args is None else args),
                         "ports": [{"name": "http", "containerPort": 8000, "protocol": "TCP"}],
                         "resources": {"limits": {"nvidia.com/gpu": "1"}},
                         "terminationMessagePath": "/dev/termination-log",
                         "terminationMessagePolicy": "File"},
                        {"name": "exporter", "image": "ghcr.io/example/specgate:0.1.0",
                         "imagePullPolicy": "IfNotPresent",
                         "args": ["exporter", "run", "--engine-url", "http://127.0.0.1:8000"],
                         "ports": [{"name": "metrics", "containerPort": 9479, "protocol": "TCP"}],
                         "terminationMessagePath": "/dev/termination-log",
                         "terminationMessagePolicy": "File"},
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler",
                    "securityContext": {},
                },
            },
        },
        "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                   "availableReplicas": 1,
                   "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                   "message": "Deployment has minimum availability.",
                                   "lastUpdateTime": "2025-06-01T10:00:00Z",
                                   "lastTransitionTime": "2025-06-01T10:00:00Z"}]},
    }


def pod(name: str = "qwen-7d9f8b6c5-x2k4p", *, started_at: str = "2025-06-01T10:00:05Z",
        ready_at: str | None = "2025-06-01T10:01:52Z", start_time: str = "2025-06-01T10:00:01Z",
        image_id: str = f"docker.io/vllm/vllm-openai@{DIGEST}", ready: bool = True,
        instance: str = "qwen") -> dict[str, Any]:
    """A running engine Pod as the kubelet reports it: engine started at `started_at`, Ready at `ready_at`."""
    ready_status = "True" if ready and ready_at else "False"
    ready_time = ready_at or started_at
    conditions = [
        {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None,
         "lastTransitionTime": start_time},
        {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": start_time},
        {"type": "Ready", "status": ready_status, "lastProbeTime": None, "lastTransitionTime": ready_time},
        {"type": "ContainersReady", "status": ready_status, "lastProbeTime": None, "lastTransitionTime": ready_time},
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": start_time},
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "generateName": name.rsplit("-", 1)[0] + "-",
                     "labels": {"app.kubernetes.io/instance": instance, "pod-template-hash": "7d9f8b6c5"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "qwen-7d9f8b6c5",
                                          "uid": "0b7e6a52-3c1e-4a6b-9f0e-2d7c1b5a4e39", "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"containers": [{"name": "engine", "image": IMAGE, "args": list(BASE_ARGS)},
                                {"name": "exporter", "image": "ghcr.io/example/specgate:0.1.0"}],
                 "nodeName": "gpu-node-1", "restartPolicy": "Always"},
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": "10.0.0.12",
            "podIP": "10.244.1.17",
            "podIPs": [{"ip": "10.244.1.17"}],
            "startTime": start_time,
            "qosClass": "BestEffort",
            "containerStatuses": [
                {"name": "engine", "image": IMAGE, "imageID": image_id,
                 "containerID": "containerd://9a8b7c6d5e4f30211a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081",
                 "ready": ready_status == "True", "restartCount": 0, "started": True,
                 "state": {"running": {"startedAt": started_at}}, "lastState": {}},
                {"name": "exporter", "image": "ghcr.io/example/specgate:0.1.0",
                 "imageID": "ghcr.io/example/specgate@sha256:" + "1" * 64,
                 "containerID": "containerd://" + "2" * 64,
                 "ready": True, "restartCount": 0, "started": True,
                 "state": {"running": {"startedAt": "2025-06-01T10:00:04Z"}}, "lastState": {}},
            ],
        },
    }
