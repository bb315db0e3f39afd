from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="JobDecision")



@_attrs_define
class JobDecision:
    """ Which variant runs the job and why (throughput per cost, not latency).

        Attributes:
            accuracy (float):
            considered (int): Ready variants considered.
            cost_per_million_rows (float): $ per million rows at that throughput.
            max_batch (int):
            model (str):
            reason (str):
            throughput_rows_s (float): Profiled saturation throughput of the variant.
            variant (str):
     """

    accuracy: float
    considered: int
    cost_per_million_rows: float
    max_batch: int
    model: str
    reason: str
    throughput_rows_s: float
    variant: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        accuracy = self.accuracy

        considered = self.considered

        cost_per_million_rows = self.cost_per_million_rows

        max_batch = self.max_batch

        model = self.model

        reason = self.reason

        throughput_rows_s = self.throughput_rows_s

        variant = self.variant


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "accuracy": accuracy,
            "considered": considered,
            "cost_per_million_rows": cost_per_million_rows,
            "max_batch": max_batch,
            "model": model,
            "reason": reason,
            "throughput_rows_s": throughput_rows_s,
            "variant": variant,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        accuracy = d.pop("accuracy")

        considered = d.pop("considered")

        cost_per_million_rows = d.pop("cost_per_million_rows")

        max_batch = d.pop("max_batch")

        model = d.pop("model")

        reason = d.pop("reason")

        throughput_rows_s = d.pop("throughput_rows_s")

        variant = d.pop("variant")

        job_decision = cls(
            accuracy=accuracy,
            considered=considered,
            cost_per_million_rows=cost_per_million_rows,
            max_batch=max_batch,
            model=model,
            reason=reason,
            throughput_rows_s=throughput_rows_s,
            variant=variant,
        )


        job_decision.additional_properties = d
        return job_decision

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
