"""What `infaas run` starts for the hardware it finds: CPU executors, one CUDA executor per GPU, and the
profiler's queues (decided from an injected `Hardware`)."""

from __future__ import annotations

from pathlib import Path

from infaas.core.config import Settings
from infaas.processes.suite import Suite
from infaas.runtimes.hardware import GpuReading, Hardware
from infaas_cli.launcher import describe_hardware, executor_plan, profiled_kinds

CPU = {"INFAAS_EXECUTOR_HARDWARE": "cpu"}
NO_GPU = Hardware(available=("cpu",), cores=2, memory_bytes=1 << 33, unavailable={"cuda": "no driver"})
TWO_GPUS = Hardware(
    available=("cpu", "cuda"),
    cores=16,
    memory_bytes=1 << 37,
    gpus=(GpuReading(0, "A", 1 << 34), GpuReading(1, "B", 1 << 34)),
)


def cuda(device: int) -> dict[str, str]:
    return {"INFAAS_EXECUTOR_HARDWARE": "cuda", "INFAAS_EXECUTOR_DEVICE": str(device)}


def test_a_cpu_machine_runs_cpu_executors_and_the_cpu_profiler(tmp_path: Path) -> None:
    settings = Settings(var_dir=tmp_path, executors=2)
    assert executor_plan(settings, NO_GPU) == {"executor": CPU, "executor-2": CPU}
    assert profiled_kinds(NO_GPU) == ["cpu"]


def test_one_executor_per_gpu_by_default(tmp_path: Path) -> None:
    settings = Settings(var_dir=tmp_path, executors=1)
    assert executor_plan(settings, TWO_GPUS) == {
        "executor": CPU,
        "executor-2": cuda(0),
        "executor-3": cuda(1),
    }
    assert profiled_kinds(TWO_GPUS) == ["cpu", "cuda"]


def test_gpu_executors_can_be_set(tmp_path: Path) -> None:
    one = Settings(var_dir=tmp_path, executors=1, gpu_executors=1)
    assert executor_plan(one, TWO_GPUS) == {"executor": CPU, "executor-2": cuda(0)}
    three = Settings(var_dir=tmp_path, executors=0, gpu_executors=3)  # GPUs taken in turn
    assert executor_plan(three, TWO_GPUS) == {
        "executor": cuda(0),
        "executor-2": cuda(1),
        "executor-3": cuda(0),
    }
    assert executor_plan(Settings(var_dir=tmp_path, executors=1, gpu_executors=2), NO_GPU) == {
        "executor": CPU
    }


def test_what_was_started_is_said_with_the_reason_for_no_gpu(tmp_path: Path) -> None:
    settings = Settings(var_dir=tmp_path, executors=1)
    said = describe_hardware(TWO_GPUS, executor_plan(settings, TWO_GPUS))
    assert (
        said
        == "1 cpu executor(s), 2 cuda executor(s) on GPUs 0: A 16 GiB, 1: B 16 GiB; profiler queues cpu, cuda"
    )
    assert (
        describe_hardware(NO_GPU, executor_plan(settings, NO_GPU))
        == "1 cpu executor(s); no cuda executor: no driver"
    )


def test_executors_step_over_the_ports_of_the_other_services(tmp_path: Path) -> None:
    # The defaults put the planner on 8084 and the profiler's metrics on 8085, right after the first
    # executor's 8083: a second executor there would take the planner's port (a GPU machine's CUDA
    # executor is a second executor), and the planner would fail to bind, again and again.
    settings = Settings(var_dir=tmp_path)
    assert settings.executor_ports(3) == [8083, 8086, 8087]
    suite = Suite(settings=settings, log_dir=tmp_path)
    planned = [
        suite.port(name) for name in executor_plan(settings.model_copy(update={"executors": 3}), NO_GPU)
    ]
    others = {settings.port(s) for s in ("gateway", "registry", "scheduler", "planner", "profiler")}
    assert planned == [8083, 8086, 8087] and not others & set(planned)
    moved = Settings(var_dir=tmp_path, planner_port=9000, profiler_metrics_port=9001)
    assert moved.executor_ports(2) == [8083, 8084]
