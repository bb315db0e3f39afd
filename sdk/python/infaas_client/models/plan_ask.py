from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="PlanAsk")



@_attrs_define
class PlanAsk:
    """ 
        Attributes:
            rate_qps (float): Arrival rate to plan for.
            apply (bool | Unset): Load the planned instances (False: plan and store only). Default: True.
            cv (float | Unset): CV of gamma inter-arrivals. Default: 1.0.
     """

    rate_qps: float
    apply: bool | Unset = True
    cv: float | Unset = 1.0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        rate_qps = self.rate_qps

        apply = self.apply

        cv = self.cv


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "rate_qps": rate_qps,
        })
        if apply is not UNSET:
            field_dict["apply"] = apply
        if cv is not UNSET:
            field_dict["cv"] = cv

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        rate_qps = d.pop("rate_qps")

        apply = d.pop("apply", UNSET)

        cv = d.pop("cv", UNSET)

        plan_ask = cls(
            rate_qps=rate_qps,
            apply=apply,
            cv=cv,
        )


        plan_ask.additional_properties = d
        return plan_ask

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
