from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="JobError")



@_attrs_define
class JobError:
    """ 
        Attributes:
            at (datetime.datetime):
            chunk (int | None):
            fatal (bool):
            message (str):
     """

    at: datetime.datetime
    chunk: int | None
    fatal: bool
    message: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        chunk: int | None
        chunk = self.chunk

        fatal = self.fatal

        message = self.message


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "at": at,
            "chunk": chunk,
            "fatal": fatal,
            "message": message,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))




        def _parse_chunk(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        chunk = _parse_chunk(d.pop("chunk"))


        fatal = d.pop("fatal")

        message = d.pop("message")

        job_error = cls(
            at=at,
            chunk=chunk,
            fatal=fatal,
            message=message,
        )


        job_error.additional_properties = d
        return job_error

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
