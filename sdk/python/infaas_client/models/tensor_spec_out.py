from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="TensorSpecOut")



@_attrs_define
class TensorSpecOut:
    """ 
        Attributes:
            dtype (str):
            name (str):
            shape (list[int | None]):
     """

    dtype: str
    name: str
    shape: list[int | None]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        dtype = self.dtype

        name = self.name

        shape = []
        for shape_item_data in self.shape:
            shape_item: int | None
            shape_item = shape_item_data
            shape.append(shape_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "dtype": dtype,
            "name": name,
            "shape": shape,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        dtype = d.pop("dtype")

        name = d.pop("name")

        shape = []
        _shape = d.pop("shape")
        for shape_item_data in (_shape):
            def _parse_shape_item(data: object) -> int | None:
                if data is None:
                    return data
                return cast(int | None, data)

            shape_item = _parse_shape_item(shape_item_data)

            shape.append(shape_item)


        tensor_spec_out = cls(
            dtype=dtype,
            name=name,
            shape=shape,
        )


        tensor_spec_out.additional_properties = d
        return tensor_spec_out

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
