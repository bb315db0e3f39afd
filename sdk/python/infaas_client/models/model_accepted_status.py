from enum import StrEnum

class ModelAcceptedStatus(StrEnum):
    FAILED = "failed"
    PROFILING = "profiling"
    READY = "ready"
    REGISTERED = "registered"

    def __str__(self) -> str:
        return str(self.value)
