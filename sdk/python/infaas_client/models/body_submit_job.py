from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field
import json
from .. import types

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="BodySubmitJob")



@_attrs_define
class BodySubmitJob:
    """ 
        Attributes:
            metadata (str): JSON: {"app" | "model", "min_accuracy"?, "input_path"?, "output_path"?, "chunk_rows"?, "task"?}
                (see JobSubmit)
            input_ (None | str | Unset): The input rows: .npy, or .npz with `x` (or one array per input)
     """

    metadata: str
    input_: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        metadata = self.metadata

        input_: None | str | Unset
        if isinstance(self.input_, Unset):
            input_ = UNSET
        else:
            input_ = self.input_


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "metadata": metadata,
        })
        if input_ is not UNSET:
            field_dict["input"] = input_

        return field_dict


    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        files.append(("metadata", (None, str(self.metadata).encode(), "text/plain")))



        if not isinstance(self.input_, Unset):
            if isinstance(self.input_, str):

                files.append(("input", (None, str(self.input_).encode(), "text/plain")))
            else:
                files.append(("input", (None, str(self.input_).encode(), "text/plain")))



        for prop_name, prop in self.additional_properties.items():
            files.append((prop_name, (None, str(prop).encode(), "text/plain")))



        return files


    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        metadata = d.pop("metadata")

        def _parse_input_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        input_ = _parse_input_(d.pop("input", UNSET))


        body_submit_job = cls(
            metadata=metadata,
            input_=input_,
        )


        body_submit_job.additional_properties = d
        return body_submit_job

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
