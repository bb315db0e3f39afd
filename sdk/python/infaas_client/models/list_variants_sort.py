from enum import StrEnum

class ListVariantsSort(StrEnum):
    ACCURACY = "accuracy"
    COST = "cost"
    LATENCY = "latency"
    LOAD = "load"
    MEMORY = "memory"
    THROUGHPUT = "throughput"

    def __str__(self) -> str:
        return str(self.value)
