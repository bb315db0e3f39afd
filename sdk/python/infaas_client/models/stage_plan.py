from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="StagePlan")



@_attrs_define
class StagePlan:
    """ What the planner chose for one stage, and what it predicts.

        Attributes:
            batch (int):
            cost_per_s (float):
            hardware (str):
            replicas (int):
            scale (float): s_m: share of the pipeline's queries that reach this stage.
            stage (str):
            variant (str):
     """

    batch: int
    cost_per_s: float
    hardware: str
    replicas: int
    scale: float
    stage: str
    variant: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        batch = self.batch

        cost_per_s = self.cost_per_s

        hardware = self.hardware

        replicas = self.replicas

        scale = self.scale

        stage = self.stage

        variant = self.variant


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "batch": batch,
            "cost_per_s": cost_per_s,
            "hardware": hardware,
            "replicas": replicas,
            "scale": scale,
            "stage": stage,
            "variant": variant,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        batch = d.pop("batch")

        cost_per_s = d.pop("cost_per_s")

        hardware = d.pop("hardware")

        replicas = d.pop("replicas")

        scale = d.pop("scale")

        stage = d.pop("stage")

        variant = d.pop("variant")

        stage_plan = cls(
            batch=batch,
            cost_per_s=cost_per_s,
            hardware=hardware,
            replicas=replicas,
            scale=scale,
            stage=stage,
            variant=variant,
        )


        stage_plan.additional_properties = d
        return stage_plan

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
