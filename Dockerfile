# One image for every infaas process: the compose services differ only in their command
# (`infaas db upgrade`, `infaas serve gateway`, `infaas serve executor`, ...). Two targets: `cpu` (the
# default, last below) and `gpu` (`docker build --target gpu`), which adds the `gpu` extra: the CUDA and
# cuDNN runtime wheels ONNX Runtime's CUDA provider loads, and NVML's bindings. The host needs the
# NVIDIA driver and container toolkit; the image needs no CUDA base.
FROM python:3.11-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system infaas \
    && useradd --system --gid infaas --create-home --home-dir /home/infaas infaas

WORKDIR /opt/infaas

# torch is pinned by the project and is by far the largest dependency, so it gets its own layer that
# survives source changes. pip resolves it through whatever pip configuration the build sees
# (pip.conf / PIP_* variables): where that configuration points at a local wheel (for instance a
# CPU-only build of torch 2.13.0), that wheel is used; otherwise the default index serves it.
RUN pip install torch==2.13.0

COPY . .
RUN pip install . \
    && mkdir -p /var/lib/infaas/artifacts \
    && chown -R infaas:infaas /var/lib/infaas

# State lives under /var/lib/infaas; the artifact directory is a named volume shared by the registry,
# the profilers and the executors (an empty named volume takes the ownership of this directory).
ENV INFAAS_VAR_DIR=/var/lib/infaas \
    INFAAS_ARTIFACT_DIR=/var/lib/infaas/artifacts \
    INFAAS_HOST=0.0.0.0

USER infaas

EXPOSE 8080 8081 8082 8083 8084

ENTRYPOINT ["infaas"]
CMD ["--help"]

FROM base AS gpu
USER root
RUN pip install '.[gpu]'
USER infaas

FROM base AS cpu
