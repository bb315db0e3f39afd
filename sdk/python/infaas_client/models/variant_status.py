from enum import StrEnum

class VariantStatus(StrEnum):
    FAILED = "failed"
    PENDING = "pending"
    PROFILING = "profiling"
    READY = "ready"

    def __str__(self) -> str:
        return str(self.value)
