from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.requested_output_parameters import RequestedOutputParameters





T = TypeVar("T", bound="RequestOutput")



@_attrs_define
class RequestOutput:
    """ 
        Attributes:
            name (str):
            parameters (None | RequestedOutputParameters | Unset):
     """

    name: str
    parameters: None | RequestedOutputParameters | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.requested_output_parameters import RequestedOutputParameters # noqa: PLC0415
        name = self.name

        parameters: dict[str, Any] | None | Unset
        if isinstance(self.parameters, Unset):
            parameters = UNSET
        elif isinstance(self.parameters, RequestedOutputParameters):
            parameters = self.parameters.to_dict()
        else:
            parameters = self.parameters


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })
        if parameters is not UNSET:
            field_dict["parameters"] = parameters

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.requested_output_parameters import RequestedOutputParameters # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        def _parse_parameters(data: object) -> None | RequestedOutputParameters | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                parameters_type_0 = RequestedOutputParameters.from_dict(data)



                return parameters_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RequestedOutputParameters | Unset, data)

        parameters = _parse_parameters(d.pop("parameters", UNSET))


        request_output = cls(
            name=name,
            parameters=parameters,
        )


        request_output.additional_properties = d
        return request_output

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
