from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.model_metadata_parameters_kind import ModelMetadataParametersKind
from typing import cast






T = TypeVar("T", bound="ModelMetadataParameters")



@_attrs_define
class ModelMetadataParameters:
    """ 
        Attributes:
            app (str):
            kind (ModelMetadataParametersKind): `model`: a named model; `app`: a model-less target, the system picks model
                and variant.
            models (list[str]): The models that may answer: the model itself, or the app's models.
            status (str): Model status (registered, profiling, ready, failed); `ready` for an app with at least one ready
                model.
     """

    app: str
    kind: ModelMetadataParametersKind
    models: list[str]
    status: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        app = self.app

        kind = self.kind.value

        models = self.models



        status = self.status


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "app": app,
            "kind": kind,
            "models": models,
            "status": status,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        app = d.pop("app")

        kind = ModelMetadataParametersKind(d.pop("kind"))




        models = cast(list[str], d.pop("models"))


        status = d.pop("status")

        model_metadata_parameters = cls(
            app=app,
            kind=kind,
            models=models,
            status=status,
        )


        model_metadata_parameters.additional_properties = d
        return model_metadata_parameters

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
