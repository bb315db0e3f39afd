from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.concurrency_point import ConcurrencyPoint
  from ..models.configuration_curve import ConfigurationCurve





T = TypeVar("T", bound="VariantCapacity")



@_attrs_define
class VariantCapacity:
    """ 
        Attributes:
            best (int | None): Concurrency carrying the most `slo_rps` per $ (None: no SLO given).
            configurations (list[ConfigurationCurve]):
            hardware (str):
            max_batch (int):
            measured (list[ConcurrencyPoint]): The profiled points the rates come from.
            model (str):
            service_rates (list[float]): μ_i (requests/s of one request while i run), i = 1..c.
            slo_ms (float | None):
            threads (int):
            variant (str):
     """

    best: int | None
    configurations: list[ConfigurationCurve]
    hardware: str
    max_batch: int
    measured: list[ConcurrencyPoint]
    model: str
    service_rates: list[float]
    slo_ms: float | None
    threads: int
    variant: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.concurrency_point import ConcurrencyPoint # noqa: PLC0415
        from ..models.configuration_curve import ConfigurationCurve # noqa: PLC0415
        best: int | None
        best = self.best

        configurations = []
        for configurations_item_data in self.configurations:
            configurations_item = configurations_item_data.to_dict()
            configurations.append(configurations_item)



        hardware = self.hardware

        max_batch = self.max_batch

        measured = []
        for measured_item_data in self.measured:
            measured_item = measured_item_data.to_dict()
            measured.append(measured_item)



        model = self.model

        service_rates = self.service_rates



        slo_ms: float | None
        slo_ms = self.slo_ms

        threads = self.threads

        variant = self.variant


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "best": best,
            "configurations": configurations,
            "hardware": hardware,
            "max_batch": max_batch,
            "measured": measured,
            "model": model,
            "service_rates": service_rates,
            "slo_ms": slo_ms,
            "threads": threads,
            "variant": variant,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.concurrency_point import ConcurrencyPoint # noqa: PLC0415
        from ..models.configuration_curve import ConfigurationCurve # noqa: PLC0415
        d = dict(src_dict)
        def _parse_best(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        best = _parse_best(d.pop("best"))


        configurations = []
        _configurations = d.pop("configurations")
        for configurations_item_data in (_configurations):
            configurations_item = ConfigurationCurve.from_dict(configurations_item_data)



            configurations.append(configurations_item)


        hardware = d.pop("hardware")

        max_batch = d.pop("max_batch")

        measured = []
        _measured = d.pop("measured")
        for measured_item_data in (_measured):
            measured_item = ConcurrencyPoint.from_dict(measured_item_data)



            measured.append(measured_item)


        model = d.pop("model")

        service_rates = cast(list[float], d.pop("service_rates"))


        def _parse_slo_ms(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        slo_ms = _parse_slo_ms(d.pop("slo_ms"))


        threads = d.pop("threads")

        variant = d.pop("variant")

        variant_capacity = cls(
            best=best,
            configurations=configurations,
            hardware=hardware,
            max_batch=max_batch,
            measured=measured,
            model=model,
            service_rates=service_rates,
            slo_ms=slo_ms,
            threads=threads,
            variant=variant,
        )


        variant_capacity.additional_properties = d
        return variant_capacity

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
