from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="HeadReport")



@_attrs_define
class HeadReport:
    """ A user's Velox head as a query or a feedback reports it.

        Attributes:
            error (float): Running error of its predictions.
            model_error (float): Running error of the bare model's on the same rows.
            origin (str): Where the head came from: its own, the mean of N users', identity.
            stale (bool): It runs worse than the bare model by more than the margin.
            updates (int): Feedback rows it has learned from.
            user (str):
     """

    error: float
    model_error: float
    origin: str
    stale: bool
    updates: int
    user: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        error = self.error

        model_error = self.model_error

        origin = self.origin

        stale = self.stale

        updates = self.updates

        user = self.user


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "error": error,
            "model_error": model_error,
            "origin": origin,
            "stale": stale,
            "updates": updates,
            "user": user,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        error = d.pop("error")

        model_error = d.pop("model_error")

        origin = d.pop("origin")

        stale = d.pop("stale")

        updates = d.pop("updates")

        user = d.pop("user")

        head_report = cls(
            error=error,
            model_error=model_error,
            origin=origin,
            stale=stale,
            updates=updates,
            user=user,
        )


        head_report.additional_properties = d
        return head_report

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
