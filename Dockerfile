# One image for every infaas process: the compose services differ only in their command
# (`infaas db upgrade`, `infaas serve gateway`, `infaas serve executor`, ...). Two targets: `cpu` (the
# default, last below) and `gpu` (`docker build --target gpu`), which adds requirements/gpu.txt: the
# `gpu` extra, i.e. the CUDA and cuDNN runtime wheels ONNX Runtime's CUDA provider loads, and NVML's
# bindings. The host needs the NVIDIA driver and container toolkit; the image needs no CUDA base.
#
# Installs follow the Makefile's sequence: the hashed locks (requirements/), then torch pinned, then the
# project itself with nothing resolved (`--no-deps`) and built by the lock's setuptools
# (`--no-build-isolation`), so the image holds exactly the locked versions.
FROM python:3.11-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    INFAAS_VAR_DIR=/var/lib/infaas \
    INFAAS_ARTIFACT_DIR=/var/lib/infaas/artifacts \
    INFAAS_HOST=0.0.0.0

# State lives under /var/lib/infaas; the artifact directory is a named volume shared by the registry,
# the profilers and the executors (an empty named volume takes the ownership of this directory).
RUN groupadd --system infaas \
    && useradd --system --gid infaas --create-home --home-dir /home/infaas infaas \
    && mkdir -p /var/lib/infaas/artifacts \
    && chown -R infaas:infaas /var/lib/infaas

WORKDIR /opt/infaas

# The Makefile's PIP_VERSION: the image's bundled pip may be older than the one the locks were tried with.
RUN pip install pip==26.3

# Only the locks before the source, so these layers survive every source change.
COPY requirements/ requirements/
RUN pip install --require-hashes -r requirements/runtime.txt

EXPOSE 8080 8081 8082 8083 8084

ENTRYPOINT ["infaas"]
CMD ["--help"]

# In each target below, torch comes after the locks (it is kept out of them: the Makefile says why) and
# before the source, so its large layer survives source changes too. pip resolves it through whatever
# pip configuration the build sees (pip.conf / PIP_* variables): where that configuration points at a
# local wheel (for instance a CPU-only build of torch 2.13.0), that wheel is used; otherwise the default
# index serves it.

FROM base AS gpu
# On top of the runtime lock: every version the two share is the same, so this adds the `gpu` extra only.
RUN pip install --require-hashes -r requirements/gpu.txt
RUN pip install torch==2.13.0
COPY . .
RUN pip install --no-deps --no-build-isolation .
USER infaas

FROM base AS cpu
RUN pip install torch==2.13.0
COPY . .
RUN pip install --no-deps --no-build-isolation .
USER infaas
