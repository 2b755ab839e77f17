# `helm test` (templates/tests/test-metrics.yaml): read the exporter's /metrics through the chart's Service
# and pass only when the exporter serves specgate metrics and its last scrape of the engine succeeded
# (specgate_engine_up 1). The Service routes to Ready pods only, so a Ready engine must show up within a
# few scrape intervals; retried until SPECGATE_TEST_DEADLINE_SECONDS. Standard library only.
import os
import re
import sys
import time
import urllib.request

url = os.environ["SPECGATE_TEST_URL"]
deadline = time.monotonic() + float(os.environ.get("SPECGATE_TEST_DEADLINE_SECONDS", "60"))
up = re.compile(r"^specgate_engine_up(\{[^}]*\})? (\S+)$", re.M)
last = "no answer"
while True:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            page = r.read(16 * 1024 * 1024).decode("utf-8", "replace")
        values = [float(m.group(2)) for m in up.finditer(page)]
        if not values:
            last = "no specgate_engine_up series on the page"
        elif max(values) == 1.0:
            families = len(set(re.findall(r"^# TYPE (specgate_\w+)", page, re.M)))
            print(f"ok: {url} serves {families} specgate families; specgate_engine_up 1")
            sys.exit(0)
        else:
            last = "specgate_engine_up is 0: the exporter cannot scrape its engine"
    except Exception as e:  # noqa: BLE001 - any failure is retried until the deadline
        last = f"{type(e).__name__}: {e}"
    if time.monotonic() > deadline:
        print(f"fail: {url}: {last}", file=sys.stderr)
        sys.exit(1)
    time.sleep(2)
