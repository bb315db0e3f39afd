from enum import StrEnum

class AppCreatedCriticality(StrEnum):
    CRITICAL = "critical"
    NORMAL = "normal"

    def __str__(self) -> str:
        return str(self.value)
