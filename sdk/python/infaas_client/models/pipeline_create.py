from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.pipeline_edge import PipelineEdge
  from ..models.pipeline_stage import PipelineStage





T = TypeVar("T", bound="PipelineCreate")



@_attrs_define
class PipelineCreate:
    """ 
        Attributes:
            app (str):
            name (str): Unique pipeline name (also its OIP model name).
            slo_ms (float): End-to-end P99 SLO.
            stages (list[PipelineStage]):
            cv (float | Unset): CV of the planned arrivals. Default: 1.0.
            edges (list[PipelineEdge] | Unset):
            min_accuracy (float | None | Unset): Accuracy floor of every stage without its own.
            rate_qps (float | None | Unset): Plan at registration for this arrival rate (None: plan on demand).
     """

    app: str
    name: str
    slo_ms: float
    stages: list[PipelineStage]
    cv: float | Unset = 1.0
    edges: list[PipelineEdge] | Unset = UNSET
    min_accuracy: float | None | Unset = UNSET
    rate_qps: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.pipeline_edge import PipelineEdge # noqa: PLC0415
        from ..models.pipeline_stage import PipelineStage # noqa: PLC0415
        app = self.app

        name = self.name

        slo_ms = self.slo_ms

        stages = []
        for stages_item_data in self.stages:
            stages_item = stages_item_data.to_dict()
            stages.append(stages_item)



        cv = self.cv

        edges: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.edges, Unset):
            edges = []
            for edges_item_data in self.edges:
                edges_item = edges_item_data.to_dict()
                edges.append(edges_item)



        min_accuracy: float | None | Unset
        if isinstance(self.min_accuracy, Unset):
            min_accuracy = UNSET
        else:
            min_accuracy = self.min_accuracy

        rate_qps: float | None | Unset
        if isinstance(self.rate_qps, Unset):
            rate_qps = UNSET
        else:
            rate_qps = self.rate_qps


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "app": app,
            "name": name,
            "slo_ms": slo_ms,
            "stages": stages,
        })
        if cv is not UNSET:
            field_dict["cv"] = cv
        if edges is not UNSET:
            field_dict["edges"] = edges
        if min_accuracy is not UNSET:
            field_dict["min_accuracy"] = min_accuracy
        if rate_qps is not UNSET:
            field_dict["rate_qps"] = rate_qps

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.pipeline_edge import PipelineEdge # noqa: PLC0415
        from ..models.pipeline_stage import PipelineStage # noqa: PLC0415
        d = dict(src_dict)
        app = d.pop("app")

        name = d.pop("name")

        slo_ms = d.pop("slo_ms")

        stages = []
        _stages = d.pop("stages")
        for stages_item_data in (_stages):
            stages_item = PipelineStage.from_dict(stages_item_data)



            stages.append(stages_item)


        cv = d.pop("cv", UNSET)

        _edges = d.pop("edges", UNSET)
        edges: list[PipelineEdge] | Unset = UNSET
        if _edges is not UNSET:
            edges = []
            for edges_item_data in _edges:
                edges_item = PipelineEdge.from_dict(edges_item_data)



                edges.append(edges_item)


        def _parse_min_accuracy(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        min_accuracy = _parse_min_accuracy(d.pop("min_accuracy", UNSET))


        def _parse_rate_qps(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rate_qps = _parse_rate_qps(d.pop("rate_qps", UNSET))


        pipeline_create = cls(
            app=app,
            name=name,
            slo_ms=slo_ms,
            stages=stages,
            cv=cv,
            edges=edges,
            min_accuracy=min_accuracy,
            rate_qps=rate_qps,
        )

        return pipeline_create

