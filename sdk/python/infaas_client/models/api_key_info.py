from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.api_key_info_role import ApiKeyInfoRole
from typing import cast
import datetime






T = TypeVar("T", bound="ApiKeyInfo")



@_attrs_define
class ApiKeyInfo:
    """ What is kept of an API key: never the key itself, only its first characters and its hash.

        Attributes:
            created_at (datetime.datetime):
            prefix (str): The key's first 8 characters, to tell keys apart.
            role (ApiKeyInfoRole):
     """

    created_at: datetime.datetime
    prefix: str
    role: ApiKeyInfoRole
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        prefix = self.prefix

        role = self.role.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "created_at": created_at,
            "prefix": prefix,
            "role": role,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        prefix = d.pop("prefix")

        role = ApiKeyInfoRole(d.pop("role"))




        api_key_info = cls(
            created_at=created_at,
            prefix=prefix,
            role=role,
        )


        api_key_info.additional_properties = d
        return api_key_info

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
