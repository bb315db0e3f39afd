from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="LatencyPoint")



@_attrs_define
class LatencyPoint:
    """ 
        Attributes:
            batch (int):
            p50_ms (float):
            p99_ms (float):
     """

    batch: int
    p50_ms: float
    p99_ms: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        batch = self.batch

        p50_ms = self.p50_ms

        p99_ms = self.p99_ms


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "batch": batch,
            "p50_ms": p50_ms,
            "p99_ms": p99_ms,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        batch = d.pop("batch")

        p50_ms = d.pop("p50_ms")

        p99_ms = d.pop("p99_ms")

        latency_point = cls(
            batch=batch,
            p50_ms=p50_ms,
            p99_ms=p99_ms,
        )


        latency_point.additional_properties = d
        return latency_point

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
