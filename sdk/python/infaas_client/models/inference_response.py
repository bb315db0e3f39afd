from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.inference_response_parameters import InferenceResponseParameters
  from ..models.response_output import ResponseOutput





T = TypeVar("T", bound="InferenceResponse")



@_attrs_define
class InferenceResponse:
    """ 
        Attributes:
            model_name (str): The target as requested: a model or an app.
            outputs (list[ResponseOutput]):
            parameters (InferenceResponseParameters): What the system did: the variant it chose, on which worker, how long
                each step took, and why.
            id (None | str | Unset):
            model_version (None | str | Unset):
     """

    model_name: str
    outputs: list[ResponseOutput]
    parameters: InferenceResponseParameters
    id: None | str | Unset = UNSET
    model_version: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.inference_response_parameters import InferenceResponseParameters # noqa: PLC0415
        from ..models.response_output import ResponseOutput # noqa: PLC0415
        model_name = self.model_name

        outputs = []
        for outputs_item_data in self.outputs:
            outputs_item = outputs_item_data.to_dict()
            outputs.append(outputs_item)



        parameters = self.parameters.to_dict()

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        model_version: None | str | Unset
        if isinstance(self.model_version, Unset):
            model_version = UNSET
        else:
            model_version = self.model_version


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "model_name": model_name,
            "outputs": outputs,
            "parameters": parameters,
        })
        if id is not UNSET:
            field_dict["id"] = id
        if model_version is not UNSET:
            field_dict["model_version"] = model_version

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.inference_response_parameters import InferenceResponseParameters # noqa: PLC0415
        from ..models.response_output import ResponseOutput # noqa: PLC0415
        d = dict(src_dict)
        model_name = d.pop("model_name")

        outputs = []
        _outputs = d.pop("outputs")
        for outputs_item_data in (_outputs):
            outputs_item = ResponseOutput.from_dict(outputs_item_data)



            outputs.append(outputs_item)


        parameters = InferenceResponseParameters.from_dict(d.pop("parameters"))




        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))


        def _parse_model_version(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model_version = _parse_model_version(d.pop("model_version", UNSET))


        inference_response = cls(
            model_name=model_name,
            outputs=outputs,
            parameters=parameters,
            id=id,
            model_version=model_version,
        )


        inference_response.additional_properties = d
        return inference_response

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
