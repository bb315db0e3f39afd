"""infaas: a model-less inference-serving system."""

import os

# ONNX Runtime (1.31 on Linux) reports usage to Microsoft unless ORT_DISABLE_TELEMETRY is set before its
# first import: it keeps a device ID and an event database under ~/.cache/Microsoft and starts threads
# that retry the upload, on the core that serves queries. A serving system sends nothing off its host
# that nobody asked for. `services`, `gateway` and `infaas_cli` import this package first, so every
# process of the suite has it set; ORT_DISABLE_TELEMETRY=0 in the environment turns it back on.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
