from enum import StrEnum

class ModelMetadataParametersKind(StrEnum):
    APP = "app"
    MODEL = "model"

    def __str__(self) -> str:
        return str(self.value)
