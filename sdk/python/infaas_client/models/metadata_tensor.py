from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.metadata_tensor_datatype import MetadataTensorDatatype
from typing import cast






T = TypeVar("T", bound="MetadataTensor")



@_attrs_define
class MetadataTensor:
    """ 
        Attributes:
            datatype (MetadataTensorDatatype):
            name (str):
            shape (list[int]): -1 for a dynamic dimension (the first one is the batch).
     """

    datatype: MetadataTensorDatatype
    name: str
    shape: list[int]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        datatype = self.datatype.value

        name = self.name

        shape = self.shape




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "datatype": datatype,
            "name": name,
            "shape": shape,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        datatype = MetadataTensorDatatype(d.pop("datatype"))




        name = d.pop("name")

        shape = cast(list[int], d.pop("shape"))


        metadata_tensor = cls(
            datatype=datatype,
            name=name,
            shape=shape,
        )


        metadata_tensor.additional_properties = d
        return metadata_tensor

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
