"""Controller scenarios: the real `kubernetes` client over real HTTP against the loopback fake API server.

Issue 6's scenarios: pre pass → patched; fail → untouched with the reason (annotation + Event);
post-flip SLO failure → flipped back (Event); API error mid-way → retried, no partial patch;
two controllers → one leader. Plus 409 conflicts, 410 Gone on a watch → relist, no flapping.
The evaluator is scripted (deterministic decisions); the plan is a real plan file read by gate.plan.model.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from gate.checks import LINES
from gate.kube.annotations import ACTIVE, LAST, REQUEST
from gate.kube.controller import Controller, ControllerConfig
from gate.kube.engine_args import strip_speculative
from gate.status import Decision, LineResult, Status
from gate.verdict.record import RunRecord
from gate.verdict.verdict import Verdict
from tests.k8s.fakeapi import FakeKube
from tests.k8s.objects import BASE_ARGS, NAMESPACE, deployment

PLAN = """\
name: qwen-ngram
target: {name: Qwen/Qwen3-8B}
engine:
  kind: vllm
  speculative: {method: ngram, num_speculative_tokens: 3}
"""
SPEC_ARGS = ["--speculative-config", '{"method":"ngram","num_speculative_tokens":3}']
T0 = 1_750_000_000.0
DEP_PATH = r"/apis/apps/v1/namespaces/llm/deployments/qwen$"


class Script:
    """Decisions per phase; records each call's phase."""

    def __init__(self, **by_phase: str) -> None:
        self.by_phase = by_phase
        self.reasons = {"fail": ("acceptance", "per-window L 1.62 < target 2.5 in 9 of 10 windows"),
                        "inconclusive": ("acceptance", "2 windows with ≥ 20 drafts; 3 required")}
        self.phases: list[str] = []

    def __call__(self, plan: Any, phase: str = "pre", metrics: Any = (), prometheus: Any = None) -> Verdict:
        self.phases.append(phase)
        decision = self.by_phase[phase]
        checks = {line: LineResult(Status.PASS, f"{line} ok") for line in LINES}
        if decision in self.reasons:
            line, why = self.reasons[decision]
            checks[line] = LineResult(Status(decision), why)
        return Verdict(decision=Decision(decision), phase=phase, checks=checks, run_record=RunRecord())


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    p = tmp_path / "qwen-ngram.yaml"
    p.write_text(PLAN)
    return p


def make(api_client: Any, plan: Path, evaluator: Any, identity: str = "ctl-a", clock: Clock | None = None,
         sleeps: list[float] | None = None, **cfg: Any) -> Controller:
    config = ControllerConfig(namespace=NAMESPACE, plan=plan, identity=identity, lease_name="specgate-ctl",
                              lease_duration_s=15, interval_s=1.0, **cfg)
    return Controller(api_client, config, evaluator=evaluator, clock=clock or Clock(),
                      sleep=(sleeps.append if sleeps is not None else (lambda s: None)))


def engine_args(dep: dict[str, Any]) -> list[str]:
    return next(c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == "engine")["args"]


def events(kube: FakeKube) -> list[dict[str, Any]]:
    """Events in the order they were created (names carry a random suffix)."""
    return sorted(kube.list("Event", NAMESPACE), key=lambda e: int(e["metadata"]["resourceVersion"]))


def test_pre_pass_turns_the_drafter_on_in_one_patch(fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="qwen-ngram"))
    ev = Script(pre="pass")
    assert make(api_client, plan_file, ev).step() is True
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS + SPEC_ARGS
    assert dep["metadata"]["annotations"][ACTIVE] == "qwen-ngram"
    last = json.loads(dep["metadata"]["annotations"][LAST])
    assert last["decision"] == "pass" and last["phase"] == "pre" and last["by"] == "ctl-a"
    assert dep["metadata"]["generation"] == 2  # the pod template changed: a rollout
    # the exporter sidecar is untouched by the strategic merge
    assert dep["spec"]["template"]["spec"]["containers"][1]["name"] == "exporter"
    assert ev.phases == ["pre"]
    patches = [r for r in fake_kube.requests if r.method == "PATCH"]
    assert len(patches) == 1 and patches[0].content_type == "application/strategic-merge-patch+json"
    (event,) = events(fake_kube)
    assert event["reason"] == "DrafterEnabled" and event["type"] == "Normal"
    assert event["involvedObject"]["kind"] == "Deployment" and event["involvedObject"]["uid"] == dep["metadata"]["uid"]


@pytest.mark.parametrize("decision,reason", [("fail", "GateFailed"), ("inconclusive", "GateInconclusive")])
def test_refusal_leaves_the_pod_template_untouched_and_says_why(
        fake_kube: FakeKube, api_client: Any, plan_file: Path, decision: str, reason: str) -> None:
    fake_kube.seed(deployment(request="qwen-ngram"))
    ev = Script(pre=decision)
    ctl = make(api_client, plan_file, ev)
    ctl.step()
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS
    assert dep["metadata"]["generation"] == 1
    assert ACTIVE not in dep["metadata"]["annotations"]
    last = json.loads(dep["metadata"]["annotations"][LAST])
    assert last["decision"] == decision
    assert last["reasons"] == [f"acceptance: {decision} — {ev.reasons[decision][1]}"]
    (event,) = events(fake_kube)
    assert event["reason"] == reason and event["type"] == "Warning"
    assert ev.reasons[decision][1] in event["message"]
    # no flapping: the same request and plan are not judged again before the backoff
    ctl.step()
    assert ev.phases == ["pre"] and len(events(fake_kube)) == 1


def test_post_slo_failure_turns_the_drafter_off_and_does_not_flap(
        fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="qwen-ngram"))
    ev = Script(pre="pass", post="inconclusive")
    clock = Clock()
    ctl = make(api_client, plan_file, ev, clock=clock, backoff_s=600)
    ctl.step()  # pre pass → on
    ctl.step()  # post inconclusive (not enough windows yet) → stays on
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS + SPEC_ARGS
    ev.by_phase["post"] = "fail"
    clock.t += 60
    ctl.step()  # post fail → off
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS
    assert ACTIVE not in dep["metadata"]["annotations"]
    assert dep["metadata"]["annotations"][REQUEST] == "qwen-ngram"  # the person's request stays
    last = json.loads(dep["metadata"]["annotations"][LAST])
    assert (last["phase"], last["decision"]) == ("post", "fail")
    off = [e for e in events(fake_kube) if e["reason"] == "DrafterDisabled"]
    assert len(off) == 1 and off[0]["type"] == "Warning" and "9 of 10 windows" in off[0]["message"]
    clock.t += 60
    ctl.step()  # within the backoff: not switched on again
    assert engine_args(fake_kube.get("Deployment", NAMESPACE, "qwen")) == BASE_ARGS
    assert ev.phases == ["pre", "post", "post"]
    clock.t += 600
    ctl.step()  # after the backoff it is judged again (pre passes here, so it goes back on)
    assert ev.phases == ["pre", "post", "post", "pre"]
    assert engine_args(fake_kube.get("Deployment", NAMESPACE, "qwen")) == BASE_ARGS + SPEC_ARGS


def test_a_changed_plan_is_judged_again_at_once(fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="qwen-ngram"))
    ev = Script(pre="fail")
    ctl = make(api_client, plan_file, ev)
    ctl.step()
    ctl.step()
    assert ev.phases == ["pre"]
    plan_file.write_text(PLAN.replace("num_speculative_tokens: 3", "num_speculative_tokens: 2"))
    ev.by_phase["pre"] = "pass"
    ctl.step()
    assert ev.phases == ["pre", "pre"]
    assert engine_args(fake_kube.get("Deployment", NAMESPACE, "qwen"))[-1] == \
        '{"method":"ngram","num_speculative_tokens":2}'


def test_api_errors_mid_way_are_retried_and_never_half_applied(
        fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="qwen-ngram"))
    fake_kube.fail("PATCH", DEP_PATH, status=500, times=2)
    fake_kube.fail("POST", r"/events$", status=503, times=1)
    sleeps: list[float] = []
    make(api_client, plan_file, Script(pre="pass"), sleeps=sleeps).step()
    assert fake_kube.count("PATCH", DEP_PATH, 500) == 2 and fake_kube.count("PATCH", DEP_PATH, 200) == 1
    # full jitter per call (gate.kube.api): retry n waits uniform(0, min(8, 0.5 * 2**(n-1))): patch <= 0.5,
    # <= 1.0; event <= 0.5 (the exact draws are tested with a seeded RNG in test_k8s_api.py)
    assert len(sleeps) == 3 and all(0 <= s <= cap for s, cap in zip(sleeps, [0.5, 1.0, 0.5], strict=True)), sleeps
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS + SPEC_ARGS and dep["metadata"]["annotations"][ACTIVE] == "qwen-ngram"
    assert [e["reason"] for e in events(fake_kube)] == ["DrafterEnabled"]
    # every version the API server ever stored is all-or-nothing: flags and annotation together
    for _, _, plural, obj in fake_kube.history:
        if plural == "deployments":
            on = "--speculative-config" in engine_args(obj)
            assert on == (ACTIVE in obj["metadata"].get("annotations", {}))


def test_api_down_leaves_the_deployment_as_it_was(fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="qwen-ngram"))
    fake_kube.fail("PATCH", DEP_PATH, status=500, times=10)
    ctl = make(api_client, plan_file, Script(pre="pass"))
    ctl.step()  # 4 attempts, all 500: nothing changes, the loop survives
    assert fake_kube.count("PATCH", DEP_PATH, 500) == 4
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS and ACTIVE not in dep["metadata"]["annotations"]
    assert dep["metadata"]["generation"] == 1 and events(fake_kube) == []
    fake_kube.faults.clear()
    ctl.step()
    assert engine_args(fake_kube.get("Deployment", NAMESPACE, "qwen")) == BASE_ARGS + SPEC_ARGS


def test_conflict_rereads_and_keeps_the_other_writers_change(
        fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="qwen-ngram"))

    def other_writer(kube: FakeKube) -> None:
        kube.update("Deployment", NAMESPACE, "qwen", lambda d: d["metadata"]["labels"].update(team="infer"))

    fake_kube.before("PATCH", DEP_PATH, other_writer)
    ev = Script(pre="pass")
    make(api_client, plan_file, ev).step()
    assert fake_kube.count("PATCH", DEP_PATH, 409) == 1 and fake_kube.count("PATCH", DEP_PATH, 200) == 1
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert dep["metadata"]["labels"]["team"] == "infer"
    assert engine_args(dep) == BASE_ARGS + SPEC_ARGS
    assert ev.phases == ["pre"]  # the verdict is reused across the re-read


def test_two_controllers_one_leader(fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="qwen-ngram"))
    clock = Clock()
    ev_a, ev_b = Script(pre="pass", post="pass"), Script(pre="pass", post="pass")
    a = make(api_client, plan_file, ev_a, identity="ctl-a", clock=clock)
    b = make(api_client, plan_file, ev_b, identity="ctl-b", clock=clock)
    assert a.step() is True
    assert b.step() is False
    lease = fake_kube.get("Lease", NAMESPACE, "specgate-ctl")
    assert lease["spec"]["holderIdentity"] == "ctl-a" and lease["spec"]["leaseDurationSeconds"] == 15
    assert ev_b.phases == [] and fake_kube.count("PATCH", DEP_PATH, 200) == 1
    clock.t += 10
    assert a.step() is True and b.step() is False  # renewed in time
    clock.t += 16  # a stops renewing; its lease expires
    assert b.step() is True
    lease = fake_kube.get("Lease", NAMESPACE, "specgate-ctl")
    assert lease["spec"]["holderIdentity"] == "ctl-b" and lease["spec"]["leaseTransitions"] == 1
    assert a.step() is False


def test_racing_for_an_expired_lease_only_one_wins(fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    clock = Clock()
    a = make(api_client, plan_file, Script(pre="pass"), identity="ctl-a", clock=clock)
    b = make(api_client, plan_file, Script(pre="pass"), identity="ctl-b", clock=clock)
    c = make(api_client, plan_file, Script(pre="pass"), identity="ctl-c", clock=clock)
    assert c.elector.try_acquire_or_renew() is True
    # a and b see c's lease (expiry counts from their own observation of it)
    assert a.elector.try_acquire_or_renew() is False and b.elector.try_acquire_or_renew() is False
    clock.t += 60  # c is gone
    won: dict[str, bool] = {}
    # b reads the expired lease; before its write lands, a reads and writes first
    fake_kube.before("PUT", r"/leases/specgate-ctl$",
                     lambda kube: won.setdefault("a", a.elector.try_acquire_or_renew()))
    won["b"] = b.elector.try_acquire_or_renew()
    assert won == {"a": True, "b": False}
    assert fake_kube.count("PUT", r"/leases/specgate-ctl$", 409) == 1
    assert fake_kube.get("Lease", NAMESPACE, "specgate-ctl")["spec"]["holderIdentity"] == "ctl-a"


def test_watch_expiry_410_relists_and_acts(fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment())  # no request yet

    def request_then_compact(kube: FakeKube) -> None:
        kube.update("Deployment", NAMESPACE, "qwen",
                    lambda d: d["metadata"]["annotations"].update({REQUEST: "qwen-ngram"}))
        kube.compact()  # the watch's resourceVersion is now older than the history: 410 Gone

    fake_kube.before("GET", r"/deployments$", request_then_compact,
                     when=lambda q: q.get("watch", "").lower() == "true")
    ctl = make(api_client, plan_file, Script(pre="pass", post="pass"))
    stop = threading.Event()
    t = threading.Thread(target=ctl.run, args=(stop,), daemon=True)
    t.start()
    try:
        for _ in range(100):
            dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
            if dep["metadata"]["annotations"].get(ACTIVE):
                break
            stop.wait(0.1)
    finally:
        stop.set()
        t.join(10)
    assert dep["metadata"]["annotations"].get(ACTIVE) == "qwen-ngram"
    lists = [i for i, r in enumerate(fake_kube.requests) if r.method == "GET" and r.path.endswith("/deployments")
             and r.query.get("watch", "").lower() != "true"]
    watches = [i for i, r in enumerate(fake_kube.requests) if r.method == "GET" and r.path.endswith("/deployments")
               and r.query.get("watch", "").lower() == "true"]
    assert len(lists) >= 2 and lists[1] > watches[0]  # listed again after the expired watch


def test_watch_event_turns_the_drafter_on_without_waiting_for_a_resync(
        fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    created = fake_kube.seed(deployment())
    ctl = make(api_client, plan_file, Script(pre="pass"))
    done = threading.Event()

    def set_request() -> None:
        fake_kube.update("Deployment", NAMESPACE, "qwen",
                         lambda d: d["metadata"]["annotations"].update({REQUEST: "qwen-ngram"}))
        done.set()

    threading.Timer(0.3, set_request).start()
    ctl.watch(created["metadata"]["resourceVersion"], timeout_s=2)
    assert done.is_set()
    assert fake_kube.get("Deployment", NAMESPACE, "qwen")["metadata"]["annotations"][ACTIVE] == "qwen-ngram"


def test_removing_the_request_turns_the_drafter_off(fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="qwen-ngram"))
    ctl = make(api_client, plan_file, Script(pre="pass", post="pass"))
    ctl.step()
    fake_kube.update("Deployment", NAMESPACE, "qwen", lambda d: d["metadata"]["annotations"].pop(REQUEST))
    ctl.step()
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS and ACTIVE not in dep["metadata"]["annotations"]
    assert [e["reason"] for e in events(fake_kube)] == ["DrafterEnabled", "DrafterRemoved"]


def test_unknown_plan_in_a_plan_directory_is_refused_once(
        fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="../etc/passwd"))
    ev = Script(pre="pass")
    ctl = make(api_client, plan_file.parent, ev)
    ctl.step()
    ctl.step()
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS and ev.phases == []
    (event,) = events(fake_kube)
    assert event["reason"] == "GateInvalidRequest" and "is not a plan name" in event["message"]


def test_unlabelled_deployments_are_ignored(fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    fake_kube.seed(deployment(request="qwen-ngram", gate_label=False))
    make(api_client, plan_file, Script(pre="pass")).step()
    assert fake_kube.count("PATCH", DEP_PATH) == 0


def test_strip_speculative_handles_both_flag_forms() -> None:
    args = ["--model", "m", "--speculative-config", "{}", "--port", "8000", "--speculative-config={}"]
    assert strip_speculative(args) == ["--model", "m", "--port", "8000"]
    sg = ["--model-path", "m", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3", "--enable-metrics"]
    assert strip_speculative(sg) == ["--model-path", "m", "--enable-metrics"]


# ---- through the real evaluator (gate.verdict.evaluate) with the repository's example plans ----

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plans"


def test_real_evaluator_seed004_mtp_passes_pre_and_turns_on(fake_kube: FakeKube, api_client: Any) -> None:
    """Seed 004's plan passes `pre` (L 3.362 / 3.102 against L* 2.204 / 1.933); vLLM gets the MTP config."""
    fake_kube.seed(deployment(request="seed004"))
    config = ControllerConfig(namespace=NAMESPACE, plan=EXAMPLES / "seed004-qwen3.6-35b-a3b-mtp.yaml",
                              identity="ctl-a", lease_name="specgate-ctl")
    ctl = Controller(api_client, config, clock=Clock())
    ctl.step()
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS + ["--speculative-config", '{"method":"mtp","num_speculative_tokens":3}']
    assert json.loads(dep["metadata"]["annotations"][LAST])["decision"] == "pass"
    ctl.step()  # post: no live evidence in the plan (captures are pre-only) → inconclusive → stays on
    assert [e["reason"] for e in events(fake_kube)] == ["DrafterEnabled"]


def test_real_evaluator_seed000_nextn_pool_fails_and_stays_off(fake_kube: FakeKube, api_client: Any) -> None:
    """Seed 000's NEXTN arm: 6 × (30,185 + 512) = 184,182 resident tokens > 161,728 allocated → fail."""
    fake_kube.seed(deployment(request="seed000"))
    config = ControllerConfig(namespace=NAMESPACE, plan=EXAMPLES / "seed000-qwen38-flash-next-nextn.yaml",
                              identity="ctl-a", lease_name="specgate-ctl")
    Controller(api_client, config, clock=Clock()).step()
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert engine_args(dep) == BASE_ARGS and dep["metadata"]["generation"] == 1
    (event,) = events(fake_kube)
    assert event["reason"] == "GateFailed"
    assert "6 × (30,185 + 512) = 184,182 resident tokens > 161,728" in event["message"]


@pytest.mark.parametrize("stalled", ["watch", "lease"])
def test_a_silent_api_server_never_hangs_the_leader_loop(
        fake_kube: FakeKube, api_client: Any, plan_file: Path, stalled: str) -> None:
    """`timeout_seconds` is enforced by the server only: on a connection that goes silent the client blocks
    forever (kubernetes-client/python issues 1148, 1402) unless every call carries a client-side timeout.
    Here the fake accepts the request and never answers; the call must give up (and the loop go on)."""
    created = fake_kube.seed(deployment())
    release = threading.Event()
    if stalled == "watch":
        fake_kube.before("GET", r"/deployments$", lambda kube: release.wait(120),
                         when=lambda q: q.get("watch", "").lower() == "true")
    else:
        fake_kube.before("GET", r"/leases/specgate-ctl$", lambda kube: release.wait(120))
    ctl = make(api_client, plan_file, Script(pre="pass"), api_timeout_s=1.0)
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            if stalled == "watch":
                outcome["result"] = ctl.watch(created["metadata"]["resourceVersion"], timeout_s=1)
            else:
                outcome["result"] = ctl.elector.try_acquire_or_renew()
        except Exception as e:  # a timeout error is fine: run() logs it and goes round again
            outcome["error"] = type(e).__name__

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(60)  # a liveness bound, far above the 1 s + 1 s the call may take
    hung = t.is_alive()
    release.set()
    t.join(10)
    assert not hung, f"the {stalled} call still waits on a silent API server"
    if stalled == "lease":
        assert outcome == {"result": False}  # cannot confirm leadership: do not act


def test_a_renewing_leader_keeps_the_lease_despite_clock_skew(
        fake_kube: FakeKube, api_client: Any, plan_file: Path) -> None:
    """leaseDurationSeconds 'is measured against the time of last observed renewTime' (Lease API reference):
    a candidate counts from when *it* saw the record change, not from the holder's clock. Here the holder's
    clock runs 10 minutes behind the candidate's; it renews every 5 s, so it must stay the only leader."""
    holder_clock, candidate_clock = Clock(), Clock()
    candidate_clock.t = holder_clock.t + 600
    a = make(api_client, plan_file, Script(pre="pass"), identity="ctl-a", clock=holder_clock)
    b = make(api_client, plan_file, Script(pre="pass"), identity="ctl-b", clock=candidate_clock)
    assert a.elector.try_acquire_or_renew() is True
    for _ in range(4):
        assert b.elector.try_acquire_or_renew() is False
        holder_clock.t += 5
        candidate_clock.t += 5
        assert a.elector.try_acquire_or_renew() is True
    assert fake_kube.get("Lease", NAMESPACE, "specgate-ctl")["spec"]["holderIdentity"] == "ctl-a"
    # once the holder stops renewing, the candidate takes over a lease duration after its last observation
    candidate_clock.t += 10
    assert b.elector.try_acquire_or_renew() is False  # saw the last renewal now: 15 s from here
    candidate_clock.t += 16
    assert b.elector.try_acquire_or_renew() is True
    assert fake_kube.get("Lease", NAMESPACE, "specgate-ctl")["spec"]["leaseTransitions"] == 1


def test_a_plan_that_is_not_a_regular_file_is_refused_at_once(api_client: Any, tmp_path: Path) -> None:
    """The plan's digest is read through gate.inputs (regular file, plan size limit): a FIFO is refused, never
    waited on, and a plan over the limit is refused before it is read."""
    import os

    from gate.inputs.loading import PLAN_LIMITS
    from gate.kube.engine_args import PlanRequestError

    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)
    with pytest.raises(PlanRequestError, match="is a FIFO, not a regular file"):
        make(api_client, fifo, Script()).resolve("qwen-ngram")
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(PLAN_LIMITS.max_bytes + 1)
    with pytest.raises(PlanRequestError, match="-byte limit"):
        make(api_client, big, Script()).resolve("qwen-ngram")


def test_llamacpp_speculative_flags_do_not_pile_up_on_a_reconcile() -> None:
    """llama.cpp's speculative flags are `--spec-*` (its profile's speculative_flag_prefixes): adding the plan's
    flags twice leaves one set, and turning speculation off without a plan strips them too."""
    from gate.kube.engine_args import with_speculative

    base = ["-m", "/models/t.gguf", "--parallel", "4", "--ctx-size", "2048"]
    cfg = {"draft-n-max": 3, "type": "draft"}
    once = with_speculative(base, "llamacpp", cfg)
    assert with_speculative(once, "llamacpp", cfg) == once
    assert once[:len(base)] == base and "--spec-draft-n-max" in once
    assert strip_speculative(once, "llamacpp") == base
    assert strip_speculative(once) == base  # no plan: every engine's prefixes
    assert strip_speculative(["--model", "m", "--speculative-config", "{}"], "llamacpp") == [
        "--model", "m", "--speculative-config", "{}"]  # llama.cpp has no --speculative-* flag to strip
