from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConcurrencyPoint")



@_attrs_define
class ConcurrencyPoint:
    """ 
        Attributes:
            concurrency (int):
            p50_ms (float):
            p99_ms (float):
            qps (float):
     """

    concurrency: int
    p50_ms: float
    p99_ms: float
    qps: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        concurrency = self.concurrency

        p50_ms = self.p50_ms

        p99_ms = self.p99_ms

        qps = self.qps


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "concurrency": concurrency,
            "p50_ms": p50_ms,
            "p99_ms": p99_ms,
            "qps": qps,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        concurrency = d.pop("concurrency")

        p50_ms = d.pop("p50_ms")

        p99_ms = d.pop("p99_ms")

        qps = d.pop("qps")

        concurrency_point = cls(
            concurrency=concurrency,
            p50_ms=p50_ms,
            p99_ms=p99_ms,
            qps=qps,
        )


        concurrency_point.additional_properties = d
        return concurrency_point

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
