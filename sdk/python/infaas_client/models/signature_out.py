from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.tensor_spec_out import TensorSpecOut





T = TypeVar("T", bound="SignatureOut")



@_attrs_define
class SignatureOut:
    """ 
        Attributes:
            inputs (list[TensorSpecOut]):
            outputs (list[TensorSpecOut]):
     """

    inputs: list[TensorSpecOut]
    outputs: list[TensorSpecOut]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.tensor_spec_out import TensorSpecOut # noqa: PLC0415
        inputs = []
        for inputs_item_data in self.inputs:
            inputs_item = inputs_item_data.to_dict()
            inputs.append(inputs_item)



        outputs = []
        for outputs_item_data in self.outputs:
            outputs_item = outputs_item_data.to_dict()
            outputs.append(outputs_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "inputs": inputs,
            "outputs": outputs,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tensor_spec_out import TensorSpecOut # noqa: PLC0415
        d = dict(src_dict)
        inputs = []
        _inputs = d.pop("inputs")
        for inputs_item_data in (_inputs):
            inputs_item = TensorSpecOut.from_dict(inputs_item_data)



            inputs.append(inputs_item)


        outputs = []
        _outputs = d.pop("outputs")
        for outputs_item_data in (_outputs):
            outputs_item = TensorSpecOut.from_dict(outputs_item_data)



            outputs.append(outputs_item)


        signature_out = cls(
            inputs=inputs,
            outputs=outputs,
        )


        signature_out.additional_properties = d
        return signature_out

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
