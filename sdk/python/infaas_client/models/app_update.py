from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.app_update_criticality import AppUpdateCriticality
from ..models.app_update_prefer import AppUpdatePrefer
from ..models.app_update_slo_policy import AppUpdateSloPolicy
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.app_update_default_output_type_0 import AppUpdateDefaultOutputType0
  from ..models.redundancy import Redundancy
  from ..models.selection import Selection





T = TypeVar("T", bound="AppUpdate")



@_attrs_define
class AppUpdate:
    """ Fields of an app that may change; omitted fields stay as they are. `null` clears the defaults
    (latency, accuracy, output); the other fields always hold a value, so `null` there is a 422.

        Attributes:
            cache (bool | Unset):
            criticality (AppUpdateCriticality | Unset):
            default_latency_ms (float | None | Unset):
            default_min_accuracy (float | None | Unset):
            default_output (AppUpdateDefaultOutputType0 | None | Unset):
            lossy (bool | Unset):
            prefer (AppUpdatePrefer | Unset):
            redundancy (Redundancy | Unset): An app's coded redundancy: `none`, or `parity` with coding groups of `k`
                queries (2..4).
            selection (Selection | Unset): How an app's queries choose among its models. `single`: the scheduler picks a
                variant of one model
                (the default); `exp3`: a bandit sends each query to one of `models`; `exp4`: every query goes to all of
                `models` and their labels are combined by learned weights. Feedback moves the weights.
            slo_policy (AppUpdateSloPolicy | Unset):
            warm_instances (int | Unset):
     """

    cache: bool | Unset = UNSET
    criticality: AppUpdateCriticality | Unset = UNSET
    default_latency_ms: float | None | Unset = UNSET
    default_min_accuracy: float | None | Unset = UNSET
    default_output: AppUpdateDefaultOutputType0 | None | Unset = UNSET
    lossy: bool | Unset = UNSET
    prefer: AppUpdatePrefer | Unset = UNSET
    redundancy: Redundancy | Unset = UNSET
    selection: Selection | Unset = UNSET
    slo_policy: AppUpdateSloPolicy | Unset = UNSET
    warm_instances: int | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.app_update_default_output_type_0 import AppUpdateDefaultOutputType0 # noqa: PLC0415
        from ..models.redundancy import Redundancy # noqa: PLC0415
        from ..models.selection import Selection # noqa: PLC0415
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
        elif isinstance(self.default_output, AppUpdateDefaultOutputType0):
            default_output = self.default_output.to_dict()
        else:
            default_output = self.default_output

        lossy = self.lossy

        prefer: str | Unset = UNSET
        if not isinstance(self.prefer, Unset):
            prefer = self.prefer.value


        redundancy: dict[str, Any] | Unset = UNSET
        if not isinstance(self.redundancy, Unset):
            redundancy = self.redundancy.to_dict()

        selection: dict[str, Any] | Unset = UNSET
        if not isinstance(self.selection, Unset):
            selection = self.selection.to_dict()

        slo_policy: str | Unset = UNSET
        if not isinstance(self.slo_policy, Unset):
            slo_policy = self.slo_policy.value


        warm_instances = self.warm_instances


        field_dict: dict[str, Any] = {}

        field_dict.update({
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
        if redundancy is not UNSET:
            field_dict["redundancy"] = redundancy
        if selection is not UNSET:
            field_dict["selection"] = selection
        if slo_policy is not UNSET:
            field_dict["slo_policy"] = slo_policy
        if warm_instances is not UNSET:
            field_dict["warm_instances"] = warm_instances

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.app_update_default_output_type_0 import AppUpdateDefaultOutputType0 # noqa: PLC0415
        from ..models.redundancy import Redundancy # noqa: PLC0415
        from ..models.selection import Selection # noqa: PLC0415
        d = dict(src_dict)
        cache = d.pop("cache", UNSET)

        _criticality = d.pop("criticality", UNSET)
        criticality: AppUpdateCriticality | Unset
        if isinstance(_criticality,  Unset):
            criticality = UNSET
        else:
            criticality = AppUpdateCriticality(_criticality)




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


        lossy = d.pop("lossy", UNSET)

        _prefer = d.pop("prefer", UNSET)
        prefer: AppUpdatePrefer | Unset
        if isinstance(_prefer,  Unset):
            prefer = UNSET
        else:
            prefer = AppUpdatePrefer(_prefer)




        _redundancy = d.pop("redundancy", UNSET)
        redundancy: Redundancy | Unset
        if isinstance(_redundancy,  Unset):
            redundancy = UNSET
        else:
            redundancy = Redundancy.from_dict(_redundancy)




        _selection = d.pop("selection", UNSET)
        selection: Selection | Unset
        if isinstance(_selection,  Unset):
            selection = UNSET
        else:
            selection = Selection.from_dict(_selection)




        _slo_policy = d.pop("slo_policy", UNSET)
        slo_policy: AppUpdateSloPolicy | Unset
        if isinstance(_slo_policy,  Unset):
            slo_policy = UNSET
        else:
            slo_policy = AppUpdateSloPolicy(_slo_policy)




        warm_instances = d.pop("warm_instances", UNSET)

        app_update = cls(
            cache=cache,
            criticality=criticality,
            default_latency_ms=default_latency_ms,
            default_min_accuracy=default_min_accuracy,
            default_output=default_output,
            lossy=lossy,
            prefer=prefer,
            redundancy=redundancy,
            selection=selection,
            slo_policy=slo_policy,
            warm_instances=warm_instances,
        )

        return app_update

