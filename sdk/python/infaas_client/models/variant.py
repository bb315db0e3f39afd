from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.variant_status import VariantStatus
from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.concurrency_point import ConcurrencyPoint
  from ..models.latency_point import LatencyPoint





T = TypeVar("T", bound="Variant")



@_attrs_define
class Variant:
    """ 
        Attributes:
            accuracy (float | None):
            artifact_digest (str): The exact bytes that were profiled (model repository).
            hardware (str):
            id (str):
            latency (list[LatencyPoint] | None):
            load_ms (float | None):
            max_batch (int):
            model (str):
            optimization (str):
            peak_memory_bytes (int | None):
            precision (str):
            profiled_at (datetime.datetime | None):
            provider (str):
            runtime (str):
            saturation_qps (float | None):
            status (VariantStatus):
            status_reason (None | str):
            threads (int):
            cost_per_query (float | None | Unset): $ per row at saturation throughput.
            cost_per_s (float | None | Unset): $ per second the instance's resources cost.
            dominated (bool | Unset): Another variant is at least as good on every axis; kept, but skipped by selection.
                Default: False.
            interference (list[ConcurrencyPoint] | None | Unset): Latency of 1…c concurrent batch-1 requests on one
                instance.
     """

    accuracy: float | None
    artifact_digest: str
    hardware: str
    id: str
    latency: list[LatencyPoint] | None
    load_ms: float | None
    max_batch: int
    model: str
    optimization: str
    peak_memory_bytes: int | None
    precision: str
    profiled_at: datetime.datetime | None
    provider: str
    runtime: str
    saturation_qps: float | None
    status: VariantStatus
    status_reason: None | str
    threads: int
    cost_per_query: float | None | Unset = UNSET
    cost_per_s: float | None | Unset = UNSET
    dominated: bool | Unset = False
    interference: list[ConcurrencyPoint] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.concurrency_point import ConcurrencyPoint # noqa: PLC0415
        from ..models.latency_point import LatencyPoint # noqa: PLC0415
        accuracy: float | None
        accuracy = self.accuracy

        artifact_digest = self.artifact_digest

        hardware = self.hardware

        id = self.id

        latency: list[dict[str, Any]] | None
        if isinstance(self.latency, list):
            latency = []
            for latency_type_0_item_data in self.latency:
                latency_type_0_item = latency_type_0_item_data.to_dict()
                latency.append(latency_type_0_item)


        else:
            latency = self.latency

        load_ms: float | None
        load_ms = self.load_ms

        max_batch = self.max_batch

        model = self.model

        optimization = self.optimization

        peak_memory_bytes: int | None
        peak_memory_bytes = self.peak_memory_bytes

        precision = self.precision

        profiled_at: None | str
        if isinstance(self.profiled_at, datetime.datetime):
            profiled_at = self.profiled_at.isoformat()
        else:
            profiled_at = self.profiled_at

        provider = self.provider

        runtime = self.runtime

        saturation_qps: float | None
        saturation_qps = self.saturation_qps

        status = self.status.value

        status_reason: None | str
        status_reason = self.status_reason

        threads = self.threads

        cost_per_query: float | None | Unset
        if isinstance(self.cost_per_query, Unset):
            cost_per_query = UNSET
        else:
            cost_per_query = self.cost_per_query

        cost_per_s: float | None | Unset
        if isinstance(self.cost_per_s, Unset):
            cost_per_s = UNSET
        else:
            cost_per_s = self.cost_per_s

        dominated = self.dominated

        interference: list[dict[str, Any]] | None | Unset
        if isinstance(self.interference, Unset):
            interference = UNSET
        elif isinstance(self.interference, list):
            interference = []
            for interference_type_0_item_data in self.interference:
                interference_type_0_item = interference_type_0_item_data.to_dict()
                interference.append(interference_type_0_item)


        else:
            interference = self.interference


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "accuracy": accuracy,
            "artifact_digest": artifact_digest,
            "hardware": hardware,
            "id": id,
            "latency": latency,
            "load_ms": load_ms,
            "max_batch": max_batch,
            "model": model,
            "optimization": optimization,
            "peak_memory_bytes": peak_memory_bytes,
            "precision": precision,
            "profiled_at": profiled_at,
            "provider": provider,
            "runtime": runtime,
            "saturation_qps": saturation_qps,
            "status": status,
            "status_reason": status_reason,
            "threads": threads,
        })
        if cost_per_query is not UNSET:
            field_dict["cost_per_query"] = cost_per_query
        if cost_per_s is not UNSET:
            field_dict["cost_per_s"] = cost_per_s
        if dominated is not UNSET:
            field_dict["dominated"] = dominated
        if interference is not UNSET:
            field_dict["interference"] = interference

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.concurrency_point import ConcurrencyPoint # noqa: PLC0415
        from ..models.latency_point import LatencyPoint # noqa: PLC0415
        d = dict(src_dict)
        def _parse_accuracy(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        accuracy = _parse_accuracy(d.pop("accuracy"))


        artifact_digest = d.pop("artifact_digest")

        hardware = d.pop("hardware")

        id = d.pop("id")

        def _parse_latency(data: object) -> list[LatencyPoint] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                latency_type_0 = []
                _latency_type_0 = data
                for latency_type_0_item_data in (_latency_type_0):
                    latency_type_0_item = LatencyPoint.from_dict(latency_type_0_item_data)



                    latency_type_0.append(latency_type_0_item)

                return latency_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[LatencyPoint] | None, data)

        latency = _parse_latency(d.pop("latency"))


        def _parse_load_ms(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        load_ms = _parse_load_ms(d.pop("load_ms"))


        max_batch = d.pop("max_batch")

        model = d.pop("model")

        optimization = d.pop("optimization")

        def _parse_peak_memory_bytes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        peak_memory_bytes = _parse_peak_memory_bytes(d.pop("peak_memory_bytes"))


        precision = d.pop("precision")

        def _parse_profiled_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                profiled_at_type_0 = datetime.datetime.fromisoformat(data)



                return profiled_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        profiled_at = _parse_profiled_at(d.pop("profiled_at"))


        provider = d.pop("provider")

        runtime = d.pop("runtime")

        def _parse_saturation_qps(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        saturation_qps = _parse_saturation_qps(d.pop("saturation_qps"))


        status = VariantStatus(d.pop("status"))




        def _parse_status_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        status_reason = _parse_status_reason(d.pop("status_reason"))


        threads = d.pop("threads")

        def _parse_cost_per_query(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cost_per_query = _parse_cost_per_query(d.pop("cost_per_query", UNSET))


        def _parse_cost_per_s(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cost_per_s = _parse_cost_per_s(d.pop("cost_per_s", UNSET))


        dominated = d.pop("dominated", UNSET)

        def _parse_interference(data: object) -> list[ConcurrencyPoint] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                interference_type_0 = []
                _interference_type_0 = data
                for interference_type_0_item_data in (_interference_type_0):
                    interference_type_0_item = ConcurrencyPoint.from_dict(interference_type_0_item_data)



                    interference_type_0.append(interference_type_0_item)

                return interference_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ConcurrencyPoint] | None | Unset, data)

        interference = _parse_interference(d.pop("interference", UNSET))


        variant = cls(
            accuracy=accuracy,
            artifact_digest=artifact_digest,
            hardware=hardware,
            id=id,
            latency=latency,
            load_ms=load_ms,
            max_batch=max_batch,
            model=model,
            optimization=optimization,
            peak_memory_bytes=peak_memory_bytes,
            precision=precision,
            profiled_at=profiled_at,
            provider=provider,
            runtime=runtime,
            saturation_qps=saturation_qps,
            status=status,
            status_reason=status_reason,
            threads=threads,
            cost_per_query=cost_per_query,
            cost_per_s=cost_per_s,
            dominated=dominated,
            interference=interference,
        )


        variant.additional_properties = d
        return variant

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
