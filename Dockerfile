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
FROM python:3.11.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 1000 specgate \
 && useradd --system --uid 1000 --gid 1000 --home-dir /home/specgate --create-home --shell /usr/sbin/nologin specgate
COPY --from=build /wheels /wheels
RUN whl="$(ls /wheels/specgate_llm-*.whl)" \
 && pip install "${whl}[kube]" \
 && rm -rf /wheels \
 && specgate --help >/dev/null
USER 1000:1000
WORKDIR /home/specgate
# 9479: exporter /metrics and /healthz; 8080: specgate serve; 9402: controller metrics.
EXPOSE 9479 8080 9402
ENTRYPOINT ["specgate"]
CMD ["--help"]
