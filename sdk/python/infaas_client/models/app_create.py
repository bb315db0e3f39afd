from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.app_create_criticality import AppCreateCriticality
from ..models.app_create_prefer import AppCreatePrefer
from ..models.app_create_slo_policy import AppCreateSloPolicy
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.app_create_default_output_type_0 import AppCreateDefaultOutputType0





T = TypeVar("T", bound="AppCreate")



@_attrs_define
class AppCreate:
    """ 
        Attributes:
            name (str): Unique app name (lowercase, digits, . _ -).
            cache (bool | Unset): Serve repeated inputs from the prediction cache. Default: True.
            criticality (AppCreateCriticality | Unset): `critical`: the planner keeps a warm backup (loaded, idle, possibly
                a smaller variant of the app's models) on another worker, so a failed worker costs milliseconds; `normal`: a
                cold backup (the artifact ready, loaded when a worker fails, smallest variant first). Default:
                AppCreateCriticality.NORMAL.
            default_latency_ms (float | None | Unset): Latency SLO when a query has none.
            default_min_accuracy (float | None | Unset): Minimum accuracy when a query has none.
            default_output (AppCreateDefaultOutputType0 | None | Unset): Outputs answered under the `default` policy:
                {output name: one row}.
            lossy (bool | Unset): Allow variants less accurate than the registered model (int8 quantization) when a query
                states no accuracy (none in the query, no `default_min_accuracy`). Off: such a query is answered only by
                variants at least as accurate as the model as registered (`reference_accuracy`). Default: False.
            prefer (AppCreatePrefer | Unset): Among variants that meet a query: the cheapest per query, or the fastest.
                Default: AppCreatePrefer.COST.
            slo_policy (AppCreateSloPolicy | Unset): What to answer when a query misses its SLO: `error` (504 saying what
                happened), `best_effort` (the late answer, marked `slo_met: false`) or `default` (`default_output`, marked
                `default: true`). Default: AppCreateSloPolicy.BEST_EFFORT.
            warm_instances (int | Unset): Instances kept loaded for each of the app's models once it is ready: the cheapest
                variant that meets the app's default requirements is loaded at once, and the planner never scales a model below
                this. 0: nothing is loaded until the first query. Default: 1.
     """

    name: str
    cache: bool | Unset = True
    criticality: AppCreateCriticality | Unset = AppCreateCriticality.NORMAL
    default_latency_ms: float | None | Unset = UNSET
    default_min_accuracy: float | None | Unset = UNSET
    default_output: AppCreateDefaultOutputType0 | None | Unset = UNSET
    lossy: bool | Unset = False
    prefer: AppCreatePrefer | Unset = AppCreatePrefer.COST
    slo_policy: AppCreateSloPolicy | Unset = AppCreateSloPolicy.BEST_EFFORT
    warm_instances: int | Unset = 1





    def to_dict(self) -> dict[str, Any]:
        from ..models.app_create_default_output_type_0 import AppCreateDefaultOutputType0 # noqa: PLC0415
        name = self.name

        cache = self.cache

        criticality: str | Unset = UNSET
        if not isinstance(self.criticality, Unset):
            criticality = self.criticality.value


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
        elif isinstance(self.default_output, AppCreateDefaultOutputType0):
            default_output = self.default_output.to_dict()
        else:
            default_output = self.default_output

        lossy = self.lossy

        prefer: str | Unset = UNSET
        if not isinstance(self.prefer, Unset):
            prefer = self.prefer.value


        slo_policy: str | Unset = UNSET
        if not isinstance(self.slo_policy, Unset):
            slo_policy = self.slo_policy.value


        warm_instances = self.warm_instances


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if cache is not UNSET:
            field_dict["cache"] = cache
        if criticality is not UNSET:
            field_dict["criticality"] = criticality
        if default_latency_ms is not UNSET:
            field_dict["default_latency_ms"] = default_latency_ms
        if default_min_accuracy is not UNSET:
            field_dict["default_min_accuracy"] = default_min_accuracy
        if default_output is not UNSET:
            field_dict["default_output"] = default_output
        if lossy is not UNSET:
            field_dict["lossy"] = lossy
        if prefer is not UNSET:
            field_dict["prefer"] = prefer
        if slo_policy is not UNSET:
            field_dict["slo_policy"] = slo_policy
        if warm_instances is not UNSET:
            field_dict["warm_instances"] = warm_instances

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.app_create_default_output_type_0 import AppCreateDefaultOutputType0 # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        cache = d.pop("cache", UNSET)

        _criticality = d.pop("criticality", UNSET)
        criticality: AppCreateCriticality | Unset
        if isinstance(_criticality,  Unset):
            criticality = UNSET
        else:
            criticality = AppCreateCriticality(_criticality)




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


        def _parse_default_output(data: object) -> AppCreateDefaultOutputType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                default_output_type_0 = AppCreateDefaultOutputType0.from_dict(data)



                return default_output_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AppCreateDefaultOutputType0 | None | Unset, data)

        default_output = _parse_default_output(d.pop("default_output", UNSET))


        lossy = d.pop("lossy", UNSET)

        _prefer = d.pop("prefer", UNSET)
        prefer: AppCreatePrefer | Unset
        if isinstance(_prefer,  Unset):
            prefer = UNSET
        else:
            prefer = AppCreatePrefer(_prefer)




        _slo_policy = d.pop("slo_policy", UNSET)
        slo_policy: AppCreateSloPolicy | Unset
        if isinstance(_slo_policy,  Unset):
            slo_policy = UNSET
        else:
            slo_policy = AppCreateSloPolicy(_slo_policy)




        warm_instances = d.pop("warm_instances", UNSET)

        app_create = cls(
            name=name,
            cache=cache,
            criticality=criticality,
            default_latency_ms=default_latency_ms,
            default_min_accuracy=default_min_accuracy,
            default_output=default_output,
            lossy=lossy,
            prefer=prefer,
            slo_policy=slo_policy,
            warm_instances=warm_instances,
        )

        return app_create

