from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.inference_request_parameters import InferenceRequestParameters
  from ..models.request_input import RequestInput
  from ..models.request_output import RequestOutput





T = TypeVar("T", bound="InferenceRequest")



@_attrs_define
class InferenceRequest:
    """ 
        Attributes:
            inputs (list[RequestInput]):
            id (None | str | Unset): Echoed in the answer.
            outputs (list[RequestOutput] | None | Unset): Which outputs to answer; all when omitted.
            parameters (InferenceRequestParameters | None | Unset):
     """

    inputs: list[RequestInput]
    id: None | str | Unset = UNSET
    outputs: list[RequestOutput] | None | Unset = UNSET
    parameters: InferenceRequestParameters | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.inference_request_parameters import InferenceRequestParameters # noqa: PLC0415
        from ..models.request_input import RequestInput # noqa: PLC0415
        from ..models.request_output import RequestOutput # noqa: PLC0415
        inputs = []
        for inputs_item_data in self.inputs:
            inputs_item = inputs_item_data.to_dict()
            inputs.append(inputs_item)



        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        outputs: list[dict[str, Any]] | None | Unset
        if isinstance(self.outputs, Unset):
            outputs = UNSET
        elif isinstance(self.outputs, list):
            outputs = []
            for outputs_type_0_item_data in self.outputs:
                outputs_type_0_item = outputs_type_0_item_data.to_dict()
                outputs.append(outputs_type_0_item)


        else:
            outputs = self.outputs

        parameters: dict[str, Any] | None | Unset
        if isinstance(self.parameters, Unset):
            parameters = UNSET
        elif isinstance(self.parameters, InferenceRequestParameters):
            parameters = self.parameters.to_dict()
        else:
            parameters = self.parameters


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "inputs": inputs,
        })
        if id is not UNSET:
            field_dict["id"] = id
        if outputs is not UNSET:
            field_dict["outputs"] = outputs
        if parameters is not UNSET:
            field_dict["parameters"] = parameters

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.inference_request_parameters import InferenceRequestParameters # noqa: PLC0415
        from ..models.request_input import RequestInput # noqa: PLC0415
        from ..models.request_output import RequestOutput # noqa: PLC0415
        d = dict(src_dict)
        inputs = []
        _inputs = d.pop("inputs")
        for inputs_item_data in (_inputs):
            inputs_item = RequestInput.from_dict(inputs_item_data)



            inputs.append(inputs_item)


        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))


        def _parse_outputs(data: object) -> list[RequestOutput] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                outputs_type_0 = []
                _outputs_type_0 = data
                for outputs_type_0_item_data in (_outputs_type_0):
                    outputs_type_0_item = RequestOutput.from_dict(outputs_type_0_item_data)



                    outputs_type_0.append(outputs_type_0_item)

                return outputs_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[RequestOutput] | None | Unset, data)

        outputs = _parse_outputs(d.pop("outputs", UNSET))


        def _parse_parameters(data: object) -> InferenceRequestParameters | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                parameters_type_0 = InferenceRequestParameters.from_dict(data)



                return parameters_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(InferenceRequestParameters | None | Unset, data)

        parameters = _parse_parameters(d.pop("parameters", UNSET))


        inference_request = cls(
            inputs=inputs,
            id=id,
            outputs=outputs,
            parameters=parameters,
        )


        inference_request.additional_properties = d
        return inference_request

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
