from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.metadata_tensor import MetadataTensor
  from ..models.model_metadata_parameters import ModelMetadataParameters





T = TypeVar("T", bound="ModelMetadata")



@_attrs_define
class ModelMetadata:
    """ 
        Attributes:
            inputs (list[MetadataTensor]):
            name (str):
            outputs (list[MetadataTensor]):
            parameters (ModelMetadataParameters):
            platform (str):
            versions (list[str] | Unset):
     """

    inputs: list[MetadataTensor]
    name: str
    outputs: list[MetadataTensor]
    parameters: ModelMetadataParameters
    platform: str
    versions: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.metadata_tensor import MetadataTensor # noqa: PLC0415
        from ..models.model_metadata_parameters import ModelMetadataParameters # noqa: PLC0415
        inputs = []
        for inputs_item_data in self.inputs:
            inputs_item = inputs_item_data.to_dict()
            inputs.append(inputs_item)



        name = self.name

        outputs = []
        for outputs_item_data in self.outputs:
            outputs_item = outputs_item_data.to_dict()
            outputs.append(outputs_item)



        parameters = self.parameters.to_dict()

        platform = self.platform

        versions: list[str] | Unset = UNSET
        if not isinstance(self.versions, Unset):
            versions = self.versions




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "inputs": inputs,
            "name": name,
            "outputs": outputs,
            "parameters": parameters,
            "platform": platform,
        })
        if versions is not UNSET:
            field_dict["versions"] = versions

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.metadata_tensor import MetadataTensor # noqa: PLC0415
        from ..models.model_metadata_parameters import ModelMetadataParameters # noqa: PLC0415
        d = dict(src_dict)
        inputs = []
        _inputs = d.pop("inputs")
        for inputs_item_data in (_inputs):
            inputs_item = MetadataTensor.from_dict(inputs_item_data)



            inputs.append(inputs_item)


        name = d.pop("name")

        outputs = []
        _outputs = d.pop("outputs")
        for outputs_item_data in (_outputs):
            outputs_item = MetadataTensor.from_dict(outputs_item_data)



            outputs.append(outputs_item)


        parameters = ModelMetadataParameters.from_dict(d.pop("parameters"))




        platform = d.pop("platform")

        versions = cast(list[str], d.pop("versions", UNSET))


        model_metadata = cls(
            inputs=inputs,
            name=name,
            outputs=outputs,
            parameters=parameters,
            platform=platform,
            versions=versions,
        )


        model_metadata.additional_properties = d
        return model_metadata

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
