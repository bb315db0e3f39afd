from enum import StrEnum

class SelectionReportPolicy(StrEnum):
    EXP3 = "exp3"
    EXP4 = "exp4"
    SINGLE = "single"

    def __str__(self) -> str:
        return str(self.value)
