from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="QueryLatency")



@_attrs_define
class QueryLatency:
    """ 
        Attributes:
            compute (float): The run of the batch it was in (ms).
            queue (float): From the dispatcher's sending to the worker picking it up (ms).
            total (float): From the query's arrival at the dispatcher to its answer (ms).
     """

    compute: float
    queue: float
    total: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        compute = self.compute

        queue = self.queue

        total = self.total


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "compute": compute,
            "queue": queue,
            "total": total,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        compute = d.pop("compute")

        queue = d.pop("queue")

        total = d.pop("total")

        query_latency = cls(
            compute=compute,
            queue=queue,
            total=total,
        )


        query_latency.additional_properties = d
        return query_latency

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
