"""What a variant costs to run: a configurable hardware price table.

Defaults are public AWS on-demand prices (us-east-1, Linux) as listed on the EC2 on-demand pricing
page when this was written; set `INFAAS_PRICE_*` to use your own:
- CPU: m5.large, $0.096/h for 2 vCPU → $0.048 per vCPU-hour;
- GPU: g4dn.xlarge, one NVIDIA T4 (+4 vCPU), $0.526/h → $0.526 per GPU-hour;
- Inferentia: inf1.xlarge, one Inferentia chip = 4 NeuronCores, $0.228/h → $0.057 per NeuronCore-hour.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PriceTable:
    cpu_vcpu_hour: float = 0.048
    gpu_hour: float = 0.526
    neuron_core_hour: float = 0.057

    def per_second(self, hardware: str, threads: int) -> float:
        """$/s of the resources one instance of a variant holds."""
        if hardware == "cpu":
            return threads * self.cpu_vcpu_hour / 3600
        if hardware == "cuda":
            # A GPU instance holds the GPU and one host core to feed it.
            return (self.gpu_hour + self.cpu_vcpu_hour) / 3600
        if hardware == "neuron":
            return (self.neuron_core_hour + self.cpu_vcpu_hour) / 3600
        raise ValueError(f"no price for hardware {hardware!r}")


def cost_per_query(per_second: float, saturation_qps: float) -> float | None:
    """$ per row served when the instance runs at its saturation throughput."""
    return per_second / saturation_qps if saturation_qps > 0 else None
