from enum import StrEnum

class JobState(StrEnum):
    CANCELLED = "cancelled"
    FAILED = "failed"
    PAUSED = "paused"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"

    def __str__(self) -> str:
        return str(self.value)
