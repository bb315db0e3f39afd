"""Measurements of one part of the system that docs/benchmarks.md or a docstring takes a number or a
design decision from: the serving path's overhead (`overhead`, `overhead_runs`, `baseline_latency`) and
the machine's floor under it (`floor`, `cpu_priority`), the gateway's HTTP lane (`http_lane`), OIP v2
(`oip`), the variant space and its costs (`variants`, `variant_rows`, `variant_plot`, `variant_memory`,
`demo_models`, `int8_batch_mates`), CUDA first shapes and the GPU checks (`cuda_first_shapes`,
`gpu_checks.sh`), faults under load (`chaos`) and deadline-aware admission (`overload`)."""
