from enum import StrEnum

class ApiKeyInfoRole(StrEnum):
    ADMIN = "admin"
    APP = "app"

    def __str__(self) -> str:
        return str(self.value)
