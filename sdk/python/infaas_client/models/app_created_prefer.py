from enum import StrEnum

class AppCreatedPrefer(StrEnum):
    COST = "cost"
    LATENCY = "latency"

    def __str__(self) -> str:
        return str(self.value)
