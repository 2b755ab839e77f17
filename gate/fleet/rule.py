"""A pod's verdict and the fleet's, each one rule in one place.

The per-window SLO (design.md "acceptance"): a stream holds it when L ≥ target in at least
`required_fraction` of its evidence windows (non-reset, ≥ min_drafts), with at least `min_windows`
of them; fewer windows is inconclusive. `window_slo_status` is that rule, shared with the
acceptance line's per-stream judgement. A pod is then:

- **fail** when its windows show the SLO not held (a fail found on what is known beats the unknown);
- **inconclusive** when it has too few windows, numbers no engine can produce (plausibility), an
  unknown restart status (no restarts series), or an engine that is down or unknown at the end;
- **pass** otherwise.

The fleet: fail when the failed share exceeds `max_failed_fraction`; else inconclusive when the
inconclusive share (pods not seen at all counted in, via `expected_pods`) exceeds
`max_inconclusive_fraction`, or no pod passed; else pass.
"""

from __future__ import annotations

from gate.plan import SLO, FleetRule
from gate.verdict import Status


def window_slo_status(windows: int, met: int, slo: SLO) -> Status:
    """The per-window SLO over `windows` evidence windows of which `met` reached the target."""
    if windows < slo.min_windows:
        return Status.INCONCLUSIVE
    return Status.PASS if met / windows >= slo.required_fraction else Status.FAIL


def fleet_status(rule: FleetRule, failed: int, inconclusive: int, passed: int,
                 missing: int) -> tuple[Status, str]:
    """The fleet's status and one sentence; `missing` pods were expected but sent nothing."""
    judged = failed + inconclusive + passed
    total = judged + missing
    if total == 0:
        return Status.INCONCLUSIVE, "no pod matched the selector"
    unknown = inconclusive + missing
    f_share, u_share = failed / total, unknown / total
    counts = f"{passed} pass, {failed} fail, {inconclusive} inconclusive" + (
        f", {missing} expected but not seen" if missing else "") + f" of {total} pods"
    if failed and f_share > rule.max_failed_fraction:
        return Status.FAIL, f"{counts}: failed share {f_share:.1%} > allowed {rule.max_failed_fraction:.1%}"
    if unknown and u_share > rule.max_inconclusive_fraction:
        return Status.INCONCLUSIVE, (f"{counts}: inconclusive share {u_share:.1%} > allowed "
                                     f"{rule.max_inconclusive_fraction:.1%}")
    if passed == 0:
        return Status.INCONCLUSIVE, f"{counts}: no pod passed"
    return Status.PASS, f"{counts}: within the rule (failed ≤ {rule.max_failed_fraction:.1%}, " \
                        f"inconclusive ≤ {rule.max_inconclusive_fraction:.1%})"
