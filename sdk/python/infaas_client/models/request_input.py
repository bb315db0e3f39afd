from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.request_input_datatype import RequestInputDatatype
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.tensor_parameters import TensorParameters





T = TypeVar("T", bound="RequestInput")



@_attrs_define
class RequestInput:
    """ 
        Attributes:
            datatype (RequestInputDatatype):
            name (str):
            shape (list[int]):
            data (list[Any] | None | Unset): Row-major elements (flat or nested); omitted when binary.
            parameters (None | TensorParameters | Unset):
     """

    datatype: RequestInputDatatype
    name: str
    shape: list[int]
    data: list[Any] | None | Unset = UNSET
    parameters: None | TensorParameters | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.tensor_parameters import TensorParameters # noqa: PLC0415
        datatype = self.datatype.value

        name = self.name

        shape = self.shape



        data: list[Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, list):
            data = self.data


        else:
            data = self.data

        parameters: dict[str, Any] | None | Unset
        if isinstance(self.parameters, Unset):
            parameters = UNSET
        elif isinstance(self.parameters, TensorParameters):
            parameters = self.parameters.to_dict()
        else:
            parameters = self.parameters


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "datatype": datatype,
            "name": name,
            "shape": shape,
        })
        if data is not UNSET:
            field_dict["data"] = data
        if parameters is not UNSET:
            field_dict["parameters"] = parameters

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tensor_parameters import TensorParameters # noqa: PLC0415
        d = dict(src_dict)
        datatype = RequestInputDatatype(d.pop("datatype"))




        name = d.pop("name")

        shape = cast(list[int], d.pop("shape"))


        def _parse_data(data: object) -> list[Any] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                data_type_0 = cast(list[Any], data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[Any] | None | Unset, data)

        data = _parse_data(d.pop("data", UNSET))


        def _parse_parameters(data: object) -> None | TensorParameters | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                parameters_type_0 = TensorParameters.from_dict(data)



                return parameters_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TensorParameters | Unset, data)

        parameters = _parse_parameters(d.pop("parameters", UNSET))


        request_input = cls(
            datatype=datatype,
            name=name,
            shape=shape,
            data=data,
            parameters=parameters,
        )


        request_input.additional_properties = d
        return request_input

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
