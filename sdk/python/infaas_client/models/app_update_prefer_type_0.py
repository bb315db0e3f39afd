from enum import StrEnum

class AppUpdatePreferType0(StrEnum):
    COST = "cost"
    LATENCY = "latency"

    def __str__(self) -> str:
        return str(self.value)
