"""The Kubernetes controller, in the pieces it is made of.

`api` (the few API calls, retried, with typed Conflict/NotFound errors), `lease` (leader election
on a coordination.k8s.io/v1 Lease), `engine_args` (the engine container's speculative flags),
`annotations` (the annotation protocol and `DecisionRecord`), `controller` (reconcile and the loop).
Nothing here imports the HTTP gate (`gate.webhook`); both answer through `gate.verdict.answer`.
"""
