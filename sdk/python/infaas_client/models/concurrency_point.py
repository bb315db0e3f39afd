from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ConcurrencyPoint")



@_attrs_define
class ConcurrencyPoint:
    """ Batch-1 requests measured while `concurrency` of them run at once on one instance (SERF).

        Attributes:
            concurrency (int):
            p50_ms (float):
            p99_ms (float):
            qps (float): Requests per second the `concurrency` loops completed together.
            mean_ms (float | None | Unset): Mean latency of one request; μ_i = 1000/mean_ms (None: profiled before SERF).
            requests (int | None | Unset): Timed requests behind the point.
     """

    concurrency: int
    p50_ms: float
    p99_ms: float
    qps: float
    mean_ms: float | None | Unset = UNSET
    requests: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        concurrency = self.concurrency

        p50_ms = self.p50_ms

        p99_ms = self.p99_ms

        qps = self.qps

        mean_ms: float | None | Unset
        if isinstance(self.mean_ms, Unset):
            mean_ms = UNSET
        else:
            mean_ms = self.mean_ms

        requests: int | None | Unset
        if isinstance(self.requests, Unset):
            requests = UNSET
        else:
            requests = self.requests


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "concurrency": concurrency,
            "p50_ms": p50_ms,
            "p99_ms": p99_ms,
            "qps": qps,
        })
        if mean_ms is not UNSET:
            field_dict["mean_ms"] = mean_ms
        if requests is not UNSET:
            field_dict["requests"] = requests

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        concurrency = d.pop("concurrency")

        p50_ms = d.pop("p50_ms")

        p99_ms = d.pop("p99_ms")

        qps = d.pop("qps")

        def _parse_mean_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mean_ms = _parse_mean_ms(d.pop("mean_ms", UNSET))


        def _parse_requests(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        requests = _parse_requests(d.pop("requests", UNSET))


        concurrency_point = cls(
            concurrency=concurrency,
            p50_ms=p50_ms,
            p99_ms=p99_ms,
            qps=qps,
            mean_ms=mean_ms,
            requests=requests,
        )


        concurrency_point.additional_properties = d
        return concurrency_point

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
