from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.stage_plan import StagePlan





T = TypeVar("T", bound="PipelinePlan")



@_attrs_define
class PipelinePlan:
    """ 
        Attributes:
            cost_per_s (float):
            feasible (bool):
            predicted_p99_ms (float):
            rate_qps (float): The arrival rate the plan was made for.
            reason (str):
            stages (list[StagePlan]):
            cv (float | Unset): The CV of the gamma inter-arrivals it was made for. Default: 1.0.
            planned_at (datetime.datetime | None | Unset):
     """

    cost_per_s: float
    feasible: bool
    predicted_p99_ms: float
    rate_qps: float
    reason: str
    stages: list[StagePlan]
    cv: float | Unset = 1.0
    planned_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.stage_plan import StagePlan # noqa: PLC0415
        cost_per_s = self.cost_per_s

        feasible = self.feasible

        predicted_p99_ms = self.predicted_p99_ms

        rate_qps = self.rate_qps

        reason = self.reason

        stages = []
        for stages_item_data in self.stages:
            stages_item = stages_item_data.to_dict()
            stages.append(stages_item)



        cv = self.cv

        planned_at: None | str | Unset
        if isinstance(self.planned_at, Unset):
            planned_at = UNSET
        elif isinstance(self.planned_at, datetime.datetime):
            planned_at = self.planned_at.isoformat()
        else:
            planned_at = self.planned_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "cost_per_s": cost_per_s,
            "feasible": feasible,
            "predicted_p99_ms": predicted_p99_ms,
            "rate_qps": rate_qps,
            "reason": reason,
            "stages": stages,
        })
        if cv is not UNSET:
            field_dict["cv"] = cv
        if planned_at is not UNSET:
            field_dict["planned_at"] = planned_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.stage_plan import StagePlan # noqa: PLC0415
        d = dict(src_dict)
        cost_per_s = d.pop("cost_per_s")

        feasible = d.pop("feasible")

        predicted_p99_ms = d.pop("predicted_p99_ms")

        rate_qps = d.pop("rate_qps")

        reason = d.pop("reason")

        stages = []
        _stages = d.pop("stages")
        for stages_item_data in (_stages):
            stages_item = StagePlan.from_dict(stages_item_data)



            stages.append(stages_item)


        cv = d.pop("cv", UNSET)

        def _parse_planned_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                planned_at_type_0 = datetime.datetime.fromisoformat(data)



                return planned_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        planned_at = _parse_planned_at(d.pop("planned_at", UNSET))


        pipeline_plan = cls(
            cost_per_s=cost_per_s,
            feasible=feasible,
            predicted_p99_ms=predicted_p99_ms,
            rate_qps=rate_qps,
            reason=reason,
            stages=stages,
            cv=cv,
            planned_at=planned_at,
        )


        pipeline_plan.additional_properties = d
        return pipeline_plan

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
