from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.load_point import LoadPoint





T = TypeVar("T", bound="ConfigurationCurve")



@_attrs_define
class ConfigurationCurve:
    """ 
        Attributes:
            concurrency (int): c: requests the instance runs at once.
            cost_per_s (float | None): $ per second of one instance of this configuration.
            curve (list[LoadPoint]):
            saturation_rps (float): c·μ_c: the arrival rate at which the queue grows without bound.
            slo_rps (float | None): Highest arrival rate whose predicted mean meets `slo_ms`.
            threads (int): Threads per request (the variant's).
     """

    concurrency: int
    cost_per_s: float | None
    curve: list[LoadPoint]
    saturation_rps: float
    slo_rps: float | None
    threads: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.load_point import LoadPoint # noqa: PLC0415
        concurrency = self.concurrency

        cost_per_s: float | None
        cost_per_s = self.cost_per_s

        curve = []
        for curve_item_data in self.curve:
            curve_item = curve_item_data.to_dict()
            curve.append(curve_item)



        saturation_rps = self.saturation_rps

        slo_rps: float | None
        slo_rps = self.slo_rps

        threads = self.threads


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "concurrency": concurrency,
            "cost_per_s": cost_per_s,
            "curve": curve,
            "saturation_rps": saturation_rps,
            "slo_rps": slo_rps,
            "threads": threads,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.load_point import LoadPoint # noqa: PLC0415
        d = dict(src_dict)
        concurrency = d.pop("concurrency")

        def _parse_cost_per_s(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        cost_per_s = _parse_cost_per_s(d.pop("cost_per_s"))


        curve = []
        _curve = d.pop("curve")
        for curve_item_data in (_curve):
            curve_item = LoadPoint.from_dict(curve_item_data)



            curve.append(curve_item)


        saturation_rps = d.pop("saturation_rps")

        def _parse_slo_rps(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        slo_rps = _parse_slo_rps(d.pop("slo_rps"))


        threads = d.pop("threads")

        configuration_curve = cls(
            concurrency=concurrency,
            cost_per_s=cost_per_s,
            curve=curve,
            saturation_rps=saturation_rps,
            slo_rps=slo_rps,
            threads=threads,
        )


        configuration_curve.additional_properties = d
        return configuration_curve

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
