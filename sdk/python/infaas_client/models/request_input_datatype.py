from enum import StrEnum

class RequestInputDatatype(StrEnum):
    BOOL = "BOOL"
    BYTES = "BYTES"
    FP16 = "FP16"
    FP32 = "FP32"
    FP64 = "FP64"
    INT16 = "INT16"
    INT32 = "INT32"
    INT64 = "INT64"
    INT8 = "INT8"
    UINT16 = "UINT16"
    UINT32 = "UINT32"
    UINT64 = "UINT64"
    UINT8 = "UINT8"

    def __str__(self) -> str:
        return str(self.value)
