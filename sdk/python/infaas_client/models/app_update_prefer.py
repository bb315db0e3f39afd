from enum import StrEnum

class AppUpdatePrefer(StrEnum):
    COST = "cost"
    LATENCY = "latency"

    def __str__(self) -> str:
        return str(self.value)
