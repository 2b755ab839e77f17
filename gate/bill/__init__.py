"""Floor 3, bill: artifact facts, the memory bill (budget, GPU memory) and the KV pools it charges."""
