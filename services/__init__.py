import infaas  # noqa: F401  (ONNX Runtime telemetry off before any module here imports it)
