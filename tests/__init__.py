import infaas  # noqa: F401  (ONNX Runtime telemetry off in the test process too, before any test imports it)
