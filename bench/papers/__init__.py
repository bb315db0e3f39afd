"""Each seed's headline experiment at our scale (docs/benchmarks.md has each beside the paper's figure):
INFaaS §6.2 autoscaling in the simulator and on the real system (`autoscale`, `autoscale_real`,
`sim_vs_real`, `autoscale_step`) and offline jobs (`offline`); SERF (`serf`, `concurrency_serving`);
ParM (`parity`, `parity_serving`); FailLite (`failover`, `failover_real`, `failover_detect`); InferLine
(`pipelines`, `pipelines_real`, `pipelines_cg_real`); Clipper and Velox (`selection_feedback`)."""
