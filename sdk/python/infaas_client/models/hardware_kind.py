from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="HardwareKind")



@_attrs_define
class HardwareKind:
    """ 
        Attributes:
            available (bool): A worker or profiler that really has this hardware is live.
            kind (str):
            price_per_hour (float): $/h of one unit (vCPU, GPU or NeuronCore) in the price table.
            profilers (int | Unset): Live profiler workers consuming this kind's queue. Default: 0.
            reason (None | str | Unset): Why it is unavailable.
            workers (int | Unset): Live executors of this kind. Default: 0.
     """

    available: bool
    kind: str
    price_per_hour: float
    profilers: int | Unset = 0
    reason: None | str | Unset = UNSET
    workers: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        available = self.available

        kind = self.kind

        price_per_hour = self.price_per_hour

        profilers = self.profilers

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        workers = self.workers


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "available": available,
            "kind": kind,
            "price_per_hour": price_per_hour,
        })
        if profilers is not UNSET:
            field_dict["profilers"] = profilers
        if reason is not UNSET:
            field_dict["reason"] = reason
        if workers is not UNSET:
            field_dict["workers"] = workers

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        available = d.pop("available")

        kind = d.pop("kind")

        price_per_hour = d.pop("price_per_hour")

        profilers = d.pop("profilers", UNSET)

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        workers = d.pop("workers", UNSET)

        hardware_kind = cls(
            available=available,
            kind=kind,
            price_per_hour=price_per_hour,
            profilers=profilers,
            reason=reason,
            workers=workers,
        )


        hardware_kind.additional_properties = d
        return hardware_kind

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
