# syntax=docker/dockerfile:1
# The specgate image: exporter sidecar (`specgate exporter run`), gate hook Job (`specgate check`),
# HTTP gate (`specgate serve`) and controller (`specgate controller`). The Helm chart runs it as UID 1000
# with a read-only root filesystem; nothing here writes outside /tmp at run time.

# Build stage: a wheel of the project (no compiler needed, pure Python).
FROM python:3.11.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY exporter ./exporter
COPY gate ./gate
RUN pip wheel --no-deps --wheel-dir /wheels .

# Run stage: the wheel with its `kube` extra (the controller and the Kubernetes evidence need the client).
# The dependencies come from deploy/image/requirements.lock (`make lock`): every one pinned with its sha256
# hashes, wheels only, installed with --require-hashes and --no-deps, so nothing unpinned or unhashed is
# fetched. The specgate wheel itself is built from this source in the build stage above, so it has no
# published hash to pin: it goes in after the lock with --no-index, so pip can only find its requirements (the
# kube extra's included) already installed from the lock, and fails if the lock misses one; `pip check` then
# checks every installed distribution's requirements.
FROM python:3.11.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 1000 specgate \
 && useradd --system --uid 1000 --gid 1000 --home-dir /home/specgate --create-home --shell /usr/sbin/nologin specgate
COPY deploy/image/requirements.lock /tmp/requirements.lock
COPY --from=build /wheels /wheels
RUN pip install --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements.lock \
 && whl="$(ls /wheels/specgate_llm-*.whl)" \
 && pip install --no-index "${whl}[kube]" \
 && pip check \
 && rm -rf /wheels /tmp/requirements.lock \
 && specgate --help >/dev/null
USER 1000:1000
WORKDIR /home/specgate
# 9479: exporter /metrics and /healthz; 8080: specgate serve; 9402: controller metrics.
EXPOSE 9479 8080 9402
ENTRYPOINT ["specgate"]
CMD ["--help"]
