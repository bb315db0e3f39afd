from enum import StrEnum

class EventOutcome(StrEnum):
    DECIDED = "decided"
    DONE = "done"
    FAILED = "failed"

    def __str__(self) -> str:
        return str(self.value)
