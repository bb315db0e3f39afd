from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field
import json
from .. import types

from ..types import UNSET, Unset

from ..types import File, FileTypes
from io import BytesIO






T = TypeVar("T", bound="BodyRegisterModel")



@_attrs_define
class BodyRegisterModel:
    """ 
        Attributes:
            file (File): The model: an ONNX file.
            metadata (str): JSON: {"name", "app", "task"}
            validation (File): Validation set: .npz with arrays x and y.
     """

    file: File
    metadata: str
    validation: File
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        file = self.file.to_tuple()


        metadata = self.metadata

        validation = self.validation.to_tuple()



        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "file": file,
            "metadata": metadata,
            "validation": validation,
        })

        return field_dict


    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        files.append(("file", self.file.to_tuple()))



        files.append(("metadata", (None, str(self.metadata).encode(), "text/plain")))



        files.append(("validation", self.validation.to_tuple()))




        for prop_name, prop in self.additional_properties.items():
            files.append((prop_name, (None, str(prop).encode(), "text/plain")))



        return files


    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        file = File(
             payload = BytesIO(d.pop("file"))
        )




        metadata = d.pop("metadata")

        validation = File(
             payload = BytesIO(d.pop("validation"))
        )




        body_register_model = cls(
            file=file,
            metadata=metadata,
            validation=validation,
        )


        body_register_model.additional_properties = d
        return body_register_model

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
