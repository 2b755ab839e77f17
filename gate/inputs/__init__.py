"""Floor 1, input: the only readers of files (plans, configs, captures, records, secrets), with limits."""
