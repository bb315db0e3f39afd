from enum import StrEnum

class ListEventsKindType0(StrEnum):
    FAILOVER = "failover"
    FAILURE = "failure"
    MODEL_AUTOSCALER = "model_autoscaler"
    PIPELINE_PLANNER = "pipeline_planner"
    PROFILER = "profiler"
    REGISTRY = "registry"
    SUPERVISOR = "supervisor"
    WORKER_AUTOSCALER = "worker_autoscaler"

    def __str__(self) -> str:
        return str(self.value)
