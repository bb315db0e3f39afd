from enum import StrEnum

class ParityStatusState(StrEnum):
    FAILED = "failed"
    QUEUED = "queued"
    READY = "ready"
    TRAINING = "training"

    def __str__(self) -> str:
        return str(self.value)
