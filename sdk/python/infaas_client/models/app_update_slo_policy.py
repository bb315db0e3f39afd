from enum import StrEnum

class AppUpdateSloPolicy(StrEnum):
    BEST_EFFORT = "best_effort"
    DEFAULT = "default"
    ERROR = "error"

    def __str__(self) -> str:
        return str(self.value)
