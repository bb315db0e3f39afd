from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.failover_note import FailoverNote
  from ..models.infer_response_outputs import InferResponseOutputs
  from ..models.query_latency import QueryLatency
  from ..models.selection_report import SelectionReport





T = TypeVar("T", bound="InferResponse")



@_attrs_define
class InferResponse:
    """ A `/v1` answer: an `Answer` as `gateway/dataplane/routes.py` renders it, or, for an app with a
    selection policy, the selection layer's combination (gateway/selection/layer.py).

        Attributes:
            hardware (str):
            latency_ms (QueryLatency):
            model (str):
            outputs (InferResponseOutputs):
            reason (str): Why this variant was chosen, and what happened.
            request_id (str):
            slo_met (bool | None): Whether total latency met the SLO; null when none was set.
            variant (str):
            worker (str):
            cached (bool | Unset): Answered from the prediction cache. Default: False.
            default (bool | Unset): The SLO was missed and the app's default output answered. Default: False.
            failover (FailoverNote | None | Unset): Set when a fallback variant answered because the worker serving the app
                failed.
            reconstructed (bool | Unset): The outputs were decoded from the query's coding group's parity model output (app
                redundancy parity), because that came before the query's own answer: an approximation, never cached. Default:
                False.
            selection (None | SelectionReport | Unset): Apps with a selection policy: which models answered and how they
                were combined.
     """

    hardware: str
    latency_ms: QueryLatency
    model: str
    outputs: InferResponseOutputs
    reason: str
    request_id: str
    slo_met: bool | None
    variant: str
    worker: str
    cached: bool | Unset = False
    default: bool | Unset = False
    failover: FailoverNote | None | Unset = UNSET
    reconstructed: bool | Unset = False
    selection: None | SelectionReport | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.failover_note import FailoverNote # noqa: PLC0415
        from ..models.infer_response_outputs import InferResponseOutputs # noqa: PLC0415
        from ..models.query_latency import QueryLatency # noqa: PLC0415
        from ..models.selection_report import SelectionReport # noqa: PLC0415
        hardware = self.hardware

        latency_ms = self.latency_ms.to_dict()

        model = self.model

        outputs = self.outputs.to_dict()

        reason = self.reason

        request_id = self.request_id

        slo_met: bool | None
        slo_met = self.slo_met

        variant = self.variant

        worker = self.worker

        cached = self.cached

        default = self.default

        failover: dict[str, Any] | None | Unset
        if isinstance(self.failover, Unset):
            failover = UNSET
        elif isinstance(self.failover, FailoverNote):
            failover = self.failover.to_dict()
        else:
            failover = self.failover

        reconstructed = self.reconstructed

        selection: dict[str, Any] | None | Unset
        if isinstance(self.selection, Unset):
            selection = UNSET
        elif isinstance(self.selection, SelectionReport):
            selection = self.selection.to_dict()
        else:
            selection = self.selection


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "hardware": hardware,
            "latency_ms": latency_ms,
            "model": model,
            "outputs": outputs,
            "reason": reason,
            "request_id": request_id,
            "slo_met": slo_met,
            "variant": variant,
            "worker": worker,
        })
        if cached is not UNSET:
            field_dict["cached"] = cached
        if default is not UNSET:
            field_dict["default"] = default
        if failover is not UNSET:
            field_dict["failover"] = failover
        if reconstructed is not UNSET:
            field_dict["reconstructed"] = reconstructed
        if selection is not UNSET:
            field_dict["selection"] = selection

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.failover_note import FailoverNote # noqa: PLC0415
        from ..models.infer_response_outputs import InferResponseOutputs # noqa: PLC0415
        from ..models.query_latency import QueryLatency # noqa: PLC0415
        from ..models.selection_report import SelectionReport # noqa: PLC0415
        d = dict(src_dict)
        hardware = d.pop("hardware")

        latency_ms = QueryLatency.from_dict(d.pop("latency_ms"))




        model = d.pop("model")

        outputs = InferResponseOutputs.from_dict(d.pop("outputs"))




        reason = d.pop("reason")

        request_id = d.pop("request_id")

        def _parse_slo_met(data: object) -> bool | None:
            if data is None:
                return data
            return cast(bool | None, data)

        slo_met = _parse_slo_met(d.pop("slo_met"))


        variant = d.pop("variant")

        worker = d.pop("worker")

        cached = d.pop("cached", UNSET)

        default = d.pop("default", UNSET)

        def _parse_failover(data: object) -> FailoverNote | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                failover_type_0 = FailoverNote.from_dict(data)



                return failover_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(FailoverNote | None | Unset, data)

        failover = _parse_failover(d.pop("failover", UNSET))


        reconstructed = d.pop("reconstructed", UNSET)

        def _parse_selection(data: object) -> None | SelectionReport | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                selection_type_0 = SelectionReport.from_dict(data)



                return selection_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SelectionReport | Unset, data)

        selection = _parse_selection(d.pop("selection", UNSET))


        infer_response = cls(
            hardware=hardware,
            latency_ms=latency_ms,
            model=model,
            outputs=outputs,
            reason=reason,
            request_id=request_id,
            slo_met=slo_met,
            variant=variant,
            worker=worker,
            cached=cached,
            default=default,
            failover=failover,
            reconstructed=reconstructed,
            selection=selection,
        )


        infer_response.additional_properties = d
        return infer_response

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
