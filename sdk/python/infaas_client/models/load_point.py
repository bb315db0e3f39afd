from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="LoadPoint")



@_attrs_define
class LoadPoint:
    """ 
        Attributes:
            arrival_rps (float):
            latency_ms (float): Predicted mean latency W ≈ S + W_q.
            service_ms (float): Mean service time S, slowed by concurrent requests.
            utilization (float): ρ = λ/(c·μ_c).
            wait_ms (float): Mean queueing delay W_q (Cosmetatos-corrected M/M/c).
     """

    arrival_rps: float
    latency_ms: float
    service_ms: float
    utilization: float
    wait_ms: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        arrival_rps = self.arrival_rps

        latency_ms = self.latency_ms

        service_ms = self.service_ms

        utilization = self.utilization

        wait_ms = self.wait_ms


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "arrival_rps": arrival_rps,
            "latency_ms": latency_ms,
            "service_ms": service_ms,
            "utilization": utilization,
            "wait_ms": wait_ms,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        arrival_rps = d.pop("arrival_rps")

        latency_ms = d.pop("latency_ms")

        service_ms = d.pop("service_ms")

        utilization = d.pop("utilization")

        wait_ms = d.pop("wait_ms")

        load_point = cls(
            arrival_rps=arrival_rps,
            latency_ms=latency_ms,
            service_ms=service_ms,
            utilization=utilization,
            wait_ms=wait_ms,
        )


        load_point.additional_properties = d
        return load_point

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
