from enum import StrEnum

class RedundancyKind(StrEnum):
    NONE = "none"
    PARITY = "parity"

    def __str__(self) -> str:
        return str(self.value)
