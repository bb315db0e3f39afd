from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="TensorParameters")



@_attrs_define
class TensorParameters:
    """ 
        Attributes:
            binary_data_size (int | None | Unset): Binary tensor extension: this many bytes of the data follow the JSON.
     """

    binary_data_size: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        binary_data_size: int | None | Unset
        if isinstance(self.binary_data_size, Unset):
            binary_data_size = UNSET
        else:
            binary_data_size = self.binary_data_size


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if binary_data_size is not UNSET:
            field_dict["binary_data_size"] = binary_data_size

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_binary_data_size(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        binary_data_size = _parse_binary_data_size(d.pop("binary_data_size", UNSET))


        tensor_parameters = cls(
            binary_data_size=binary_data_size,
        )


        tensor_parameters.additional_properties = d
        return tensor_parameters

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
