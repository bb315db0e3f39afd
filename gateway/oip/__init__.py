"""The Open Inference Protocol v2 (KServe / Triton REST) at `/v2`: routes, tensor codec, errors, schemas."""
