from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.app_update_prefer_type_0 import AppUpdatePreferType0
from ..models.app_update_slo_policy_type_0 import AppUpdateSloPolicyType0
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.app_update_default_output_type_0 import AppUpdateDefaultOutputType0





T = TypeVar("T", bound="AppUpdate")



@_attrs_define
class AppUpdate:
    """ Fields of an app that may change; omitted fields stay as they are.

        Attributes:
            cache (bool | None | Unset):
            default_latency_ms (float | None | Unset):
            default_min_accuracy (float | None | Unset):
            default_output (AppUpdateDefaultOutputType0 | None | Unset):
            prefer (AppUpdatePreferType0 | None | Unset):
            slo_policy (AppUpdateSloPolicyType0 | None | Unset):
     """

    cache: bool | None | Unset = UNSET
    default_latency_ms: float | None | Unset = UNSET
    default_min_accuracy: float | None | Unset = UNSET
    default_output: AppUpdateDefaultOutputType0 | None | Unset = UNSET
    prefer: AppUpdatePreferType0 | None | Unset = UNSET
    slo_policy: AppUpdateSloPolicyType0 | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.app_update_default_output_type_0 import AppUpdateDefaultOutputType0 # noqa: PLC0415
        cache: bool | None | Unset
        if isinstance(self.cache, Unset):
            cache = UNSET
        else:
            cache = self.cache

        default_latency_ms: float | None | Unset
        if isinstance(self.default_latency_ms, Unset):
            default_latency_ms = UNSET
        else:
            default_latency_ms = self.default_latency_ms

        default_min_accuracy: float | None | Unset
        if isinstance(self.default_min_accuracy, Unset):
            default_min_accuracy = UNSET
        else:
            default_min_accuracy = self.default_min_accuracy

        default_output: dict[str, Any] | None | Unset
        if isinstance(self.default_output, Unset):
            default_output = UNSET
        elif isinstance(self.default_output, AppUpdateDefaultOutputType0):
            default_output = self.default_output.to_dict()
        else:
            default_output = self.default_output

        prefer: None | str | Unset
        if isinstance(self.prefer, Unset):
            prefer = UNSET
        elif isinstance(self.prefer, AppUpdatePreferType0):
            prefer = self.prefer.value
        else:
            prefer = self.prefer

        slo_policy: None | str | Unset
        if isinstance(self.slo_policy, Unset):
            slo_policy = UNSET
        elif isinstance(self.slo_policy, AppUpdateSloPolicyType0):
            slo_policy = self.slo_policy.value
        else:
            slo_policy = self.slo_policy


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if cache is not UNSET:
            field_dict["cache"] = cache
        if default_latency_ms is not UNSET:
            field_dict["default_latency_ms"] = default_latency_ms
        if default_min_accuracy is not UNSET:
            field_dict["default_min_accuracy"] = default_min_accuracy
        if default_output is not UNSET:
            field_dict["default_output"] = default_output
        if prefer is not UNSET:
            field_dict["prefer"] = prefer
        if slo_policy is not UNSET:
            field_dict["slo_policy"] = slo_policy

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.app_update_default_output_type_0 import AppUpdateDefaultOutputType0 # noqa: PLC0415
        d = dict(src_dict)
        def _parse_cache(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        cache = _parse_cache(d.pop("cache", UNSET))


        def _parse_default_latency_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        default_latency_ms = _parse_default_latency_ms(d.pop("default_latency_ms", UNSET))


        def _parse_default_min_accuracy(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        default_min_accuracy = _parse_default_min_accuracy(d.pop("default_min_accuracy", UNSET))


        def _parse_default_output(data: object) -> AppUpdateDefaultOutputType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                default_output_type_0 = AppUpdateDefaultOutputType0.from_dict(data)



                return default_output_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AppUpdateDefaultOutputType0 | None | Unset, data)

        default_output = _parse_default_output(d.pop("default_output", UNSET))


        def _parse_prefer(data: object) -> AppUpdatePreferType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                prefer_type_0 = AppUpdatePreferType0(data)



                return prefer_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AppUpdatePreferType0 | None | Unset, data)

        prefer = _parse_prefer(d.pop("prefer", UNSET))


        def _parse_slo_policy(data: object) -> AppUpdateSloPolicyType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                slo_policy_type_0 = AppUpdateSloPolicyType0(data)



                return slo_policy_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AppUpdateSloPolicyType0 | None | Unset, data)

        slo_policy = _parse_slo_policy(d.pop("slo_policy", UNSET))


        app_update = cls(
            cache=cache,
            default_latency_ms=default_latency_ms,
            default_min_accuracy=default_min_accuracy,
            default_output=default_output,
            prefer=prefer,
            slo_policy=slo_policy,
        )

        return app_update

