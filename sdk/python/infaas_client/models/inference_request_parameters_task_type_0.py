from enum import StrEnum

class InferenceRequestParametersTaskType0(StrEnum):
    CLASSIFICATION = "classification"
    REGRESSION = "regression"

    def __str__(self) -> str:
        return str(self.value)
