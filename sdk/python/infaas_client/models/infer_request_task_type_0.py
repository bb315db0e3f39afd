from enum import StrEnum

class InferRequestTaskType0(StrEnum):
    CLASSIFICATION = "classification"
    REGRESSION = "regression"

    def __str__(self) -> str:
        return str(self.value)
