"""Floor 1, input: the rollout plan (model), its generated reference, `specgate init`'s writer."""
