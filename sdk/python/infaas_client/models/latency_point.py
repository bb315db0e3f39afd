from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="LatencyPoint")



@_attrs_define
class LatencyPoint:
    """ 
        Attributes:
            batch (int):
            p50_ms (float):
            p99_ms (float):
            memory_bytes (int | None | Unset): Peak memory of the variant, measured in a fresh process, once batches up to
                this size have run: GPU memory (NVML) for a GPU variant, host memory otherwise.
     """

    batch: int
    p50_ms: float
    p99_ms: float
    memory_bytes: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        batch = self.batch

        p50_ms = self.p50_ms

        p99_ms = self.p99_ms

        memory_bytes: int | None | Unset
        if isinstance(self.memory_bytes, Unset):
            memory_bytes = UNSET
        else:
            memory_bytes = self.memory_bytes


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "batch": batch,
            "p50_ms": p50_ms,
            "p99_ms": p99_ms,
        })
        if memory_bytes is not UNSET:
            field_dict["memory_bytes"] = memory_bytes

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        batch = d.pop("batch")

        p50_ms = d.pop("p50_ms")

        p99_ms = d.pop("p99_ms")

        def _parse_memory_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_bytes = _parse_memory_bytes(d.pop("memory_bytes", UNSET))


        latency_point = cls(
            batch=batch,
            p50_ms=p50_ms,
            p99_ms=p99_ms,
            memory_bytes=memory_bytes,
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
