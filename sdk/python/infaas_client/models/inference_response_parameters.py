from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="InferenceResponseParameters")



@_attrs_define
class InferenceResponseParameters:
    """ What the system did: the variant it chose, on which worker, how long each step took, and why.

        Attributes:
            cached (bool):
            compute_ms (float):
            default (bool):
            hardware (str):
            model (str): The model that answered (for an app: the one the system chose).
            queue_ms (float):
            reason (str):
            request_id (str):
            total_ms (float):
            variant (str):
            worker (str):
            slo_met (bool | None | Unset): Omitted when the query had no latency SLO.
     """

    cached: bool
    compute_ms: float
    default: bool
    hardware: str
    model: str
    queue_ms: float
    reason: str
    request_id: str
    total_ms: float
    variant: str
    worker: str
    slo_met: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        cached = self.cached

        compute_ms = self.compute_ms

        default = self.default

        hardware = self.hardware

        model = self.model

        queue_ms = self.queue_ms

        reason = self.reason

        request_id = self.request_id

        total_ms = self.total_ms

        variant = self.variant

        worker = self.worker

        slo_met: bool | None | Unset
        if isinstance(self.slo_met, Unset):
            slo_met = UNSET
        else:
            slo_met = self.slo_met


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "cached": cached,
            "compute_ms": compute_ms,
            "default": default,
            "hardware": hardware,
            "model": model,
            "queue_ms": queue_ms,
            "reason": reason,
            "request_id": request_id,
            "total_ms": total_ms,
            "variant": variant,
            "worker": worker,
        })
        if slo_met is not UNSET:
            field_dict["slo_met"] = slo_met

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cached = d.pop("cached")

        compute_ms = d.pop("compute_ms")

        default = d.pop("default")

        hardware = d.pop("hardware")

        model = d.pop("model")

        queue_ms = d.pop("queue_ms")

        reason = d.pop("reason")

        request_id = d.pop("request_id")

        total_ms = d.pop("total_ms")

        variant = d.pop("variant")

        worker = d.pop("worker")

        def _parse_slo_met(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        slo_met = _parse_slo_met(d.pop("slo_met", UNSET))


        inference_response_parameters = cls(
            cached=cached,
            compute_ms=compute_ms,
            default=default,
            hardware=hardware,
            model=model,
            queue_ms=queue_ms,
            reason=reason,
            request_id=request_id,
            total_ms=total_ms,
            variant=variant,
            worker=worker,
            slo_met=slo_met,
        )


        inference_response_parameters.additional_properties = d
        return inference_response_parameters

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
