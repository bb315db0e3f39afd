from enum import StrEnum

class ParityStatusMetricType0(StrEnum):
    ACCURACY = "accuracy"
    R2 = "r2"

    def __str__(self) -> str:
        return str(self.value)
