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
  from ..models.pipeline_edge import PipelineEdge
  from ..models.pipeline_plan import PipelinePlan
  from ..models.pipeline_plan_error_type_0 import PipelinePlanErrorType0
  from ..models.pipeline_stage import PipelineStage





T = TypeVar("T", bound="Pipeline")



@_attrs_define
class Pipeline:
    """ 
        Attributes:
            app (str):
            created_at (datetime.datetime):
            edges (list[PipelineEdge]):
            min_accuracy (float | None):
            name (str):
            order (list[str]): The stages in the order a query runs them (root first).
            slo_ms (float):
            stages (list[PipelineStage]):
            plan (None | PipelinePlan | Unset):
            plan_error (None | PipelinePlanErrorType0 | Unset): Why the plan asked for at registration was not made (the
                pipeline is stored).
     """

    app: str
    created_at: datetime.datetime
    edges: list[PipelineEdge]
    min_accuracy: float | None
    name: str
    order: list[str]
    slo_ms: float
    stages: list[PipelineStage]
    plan: None | PipelinePlan | Unset = UNSET
    plan_error: None | PipelinePlanErrorType0 | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.pipeline_edge import PipelineEdge # noqa: PLC0415
        from ..models.pipeline_plan import PipelinePlan # noqa: PLC0415
        from ..models.pipeline_plan_error_type_0 import PipelinePlanErrorType0 # noqa: PLC0415
        from ..models.pipeline_stage import PipelineStage # noqa: PLC0415
        app = self.app

        created_at = self.created_at.isoformat()

        edges = []
        for edges_item_data in self.edges:
            edges_item = edges_item_data.to_dict()
            edges.append(edges_item)



        min_accuracy: float | None
        min_accuracy = self.min_accuracy

        name = self.name

        order = self.order



        slo_ms = self.slo_ms

        stages = []
        for stages_item_data in self.stages:
            stages_item = stages_item_data.to_dict()
            stages.append(stages_item)



        plan: dict[str, Any] | None | Unset
        if isinstance(self.plan, Unset):
            plan = UNSET
        elif isinstance(self.plan, PipelinePlan):
            plan = self.plan.to_dict()
        else:
            plan = self.plan

        plan_error: dict[str, Any] | None | Unset
        if isinstance(self.plan_error, Unset):
            plan_error = UNSET
        elif isinstance(self.plan_error, PipelinePlanErrorType0):
            plan_error = self.plan_error.to_dict()
        else:
            plan_error = self.plan_error


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "app": app,
            "created_at": created_at,
            "edges": edges,
            "min_accuracy": min_accuracy,
            "name": name,
            "order": order,
            "slo_ms": slo_ms,
            "stages": stages,
        })
        if plan is not UNSET:
            field_dict["plan"] = plan
        if plan_error is not UNSET:
            field_dict["plan_error"] = plan_error

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.pipeline_edge import PipelineEdge # noqa: PLC0415
        from ..models.pipeline_plan import PipelinePlan # noqa: PLC0415
        from ..models.pipeline_plan_error_type_0 import PipelinePlanErrorType0 # noqa: PLC0415
        from ..models.pipeline_stage import PipelineStage # noqa: PLC0415
        d = dict(src_dict)
        app = d.pop("app")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        edges = []
        _edges = d.pop("edges")
        for edges_item_data in (_edges):
            edges_item = PipelineEdge.from_dict(edges_item_data)



            edges.append(edges_item)


        def _parse_min_accuracy(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        min_accuracy = _parse_min_accuracy(d.pop("min_accuracy"))


        name = d.pop("name")

        order = cast(list[str], d.pop("order"))


        slo_ms = d.pop("slo_ms")

        stages = []
        _stages = d.pop("stages")
        for stages_item_data in (_stages):
            stages_item = PipelineStage.from_dict(stages_item_data)



            stages.append(stages_item)


        def _parse_plan(data: object) -> None | PipelinePlan | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                plan_type_0 = PipelinePlan.from_dict(data)



                return plan_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PipelinePlan | Unset, data)

        plan = _parse_plan(d.pop("plan", UNSET))


        def _parse_plan_error(data: object) -> None | PipelinePlanErrorType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                plan_error_type_0 = PipelinePlanErrorType0.from_dict(data)



                return plan_error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PipelinePlanErrorType0 | Unset, data)

        plan_error = _parse_plan_error(d.pop("plan_error", UNSET))


        pipeline = cls(
            app=app,
            created_at=created_at,
            edges=edges,
            min_accuracy=min_accuracy,
            name=name,
            order=order,
            slo_ms=slo_ms,
            stages=stages,
            plan=plan,
            plan_error=plan_error,
        )


        pipeline.additional_properties = d
        return pipeline

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
