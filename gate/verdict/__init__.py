"""Floor 5, verdict: evaluate, the verdict, the run record, reports, the services' answer and metrics."""
