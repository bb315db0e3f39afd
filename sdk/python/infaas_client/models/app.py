from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.app_criticality import AppCriticality
from ..models.app_prefer import AppPrefer
from ..models.app_slo_policy import AppSloPolicy
from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.api_key_info import ApiKeyInfo
  from ..models.app_default_output_type_0 import AppDefaultOutputType0
  from ..models.redundancy import Redundancy
  from ..models.selection import Selection





T = TypeVar("T", bound="App")



@_attrs_define
class App:
    """ 
        Attributes:
            created_at (datetime.datetime):
            default_latency_ms (float | None):
            default_min_accuracy (float | None):
            name (str):
            slo_policy (AppSloPolicy):
            cache (bool | Unset):  Default: True.
            criticality (AppCriticality | Unset):  Default: AppCriticality.NORMAL.
            default_output (AppDefaultOutputType0 | None | Unset):
            keys (list[ApiKeyInfo] | Unset): The app's API keys (prefixes only).
            lossy (bool | Unset):  Default: False.
            models (list[str] | Unset):
            prefer (AppPrefer | Unset):  Default: AppPrefer.COST.
            redundancy (Redundancy | Unset): An app's coded redundancy: `none`, or `parity` with coding groups of `k`
                queries (2..4).
            selection (Selection | Unset): How an app's queries choose among its models. `single`: the scheduler picks a
                variant of one model
                (the default); `exp3`: a bandit sends each query to one of `models`; `exp4`: every query goes to all of
                `models` and their labels are combined by learned weights. Feedback moves the weights.
            warm_instances (int | Unset):  Default: 1.
     """

    created_at: datetime.datetime
    default_latency_ms: float | None
    default_min_accuracy: float | None
    name: str
    slo_policy: AppSloPolicy
    cache: bool | Unset = True
    criticality: AppCriticality | Unset = AppCriticality.NORMAL
    default_output: AppDefaultOutputType0 | None | Unset = UNSET
    keys: list[ApiKeyInfo] | Unset = UNSET
    lossy: bool | Unset = False
    models: list[str] | Unset = UNSET
    prefer: AppPrefer | Unset = AppPrefer.COST
    redundancy: Redundancy | Unset = UNSET
    selection: Selection | Unset = UNSET
    warm_instances: int | Unset = 1
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.api_key_info import ApiKeyInfo # noqa: PLC0415
        from ..models.app_default_output_type_0 import AppDefaultOutputType0 # noqa: PLC0415
        from ..models.redundancy import Redundancy # noqa: PLC0415
        from ..models.selection import Selection # noqa: PLC0415
        created_at = self.created_at.isoformat()

        default_latency_ms: float | None
        default_latency_ms = self.default_latency_ms

        default_min_accuracy: float | None
        default_min_accuracy = self.default_min_accuracy

        name = self.name

        slo_policy = self.slo_policy.value

        cache = self.cache

        criticality: str | Unset = UNSET
        if not isinstance(self.criticality, Unset):
            criticality = self.criticality.value


        default_output: dict[str, Any] | None | Unset
        if isinstance(self.default_output, Unset):
            default_output = UNSET
        elif isinstance(self.default_output, AppDefaultOutputType0):
            default_output = self.default_output.to_dict()
        else:
            default_output = self.default_output

        keys: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.keys, Unset):
            keys = []
            for keys_item_data in self.keys:
                keys_item = keys_item_data.to_dict()
                keys.append(keys_item)



        lossy = self.lossy

        models: list[str] | Unset = UNSET
        if not isinstance(self.models, Unset):
            models = self.models



        prefer: str | Unset = UNSET
        if not isinstance(self.prefer, Unset):
            prefer = self.prefer.value


        redundancy: dict[str, Any] | Unset = UNSET
        if not isinstance(self.redundancy, Unset):
            redundancy = self.redundancy.to_dict()

        selection: dict[str, Any] | Unset = UNSET
        if not isinstance(self.selection, Unset):
            selection = self.selection.to_dict()

        warm_instances = self.warm_instances


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "created_at": created_at,
            "default_latency_ms": default_latency_ms,
            "default_min_accuracy": default_min_accuracy,
            "name": name,
            "slo_policy": slo_policy,
        })
        if cache is not UNSET:
            field_dict["cache"] = cache
        if criticality is not UNSET:
            field_dict["criticality"] = criticality
        if default_output is not UNSET:
            field_dict["default_output"] = default_output
        if keys is not UNSET:
            field_dict["keys"] = keys
        if lossy is not UNSET:
            field_dict["lossy"] = lossy
        if models is not UNSET:
            field_dict["models"] = models
        if prefer is not UNSET:
            field_dict["prefer"] = prefer
        if redundancy is not UNSET:
            field_dict["redundancy"] = redundancy
        if selection is not UNSET:
            field_dict["selection"] = selection
        if warm_instances is not UNSET:
            field_dict["warm_instances"] = warm_instances

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.api_key_info import ApiKeyInfo # noqa: PLC0415
        from ..models.app_default_output_type_0 import AppDefaultOutputType0 # noqa: PLC0415
        from ..models.redundancy import Redundancy # noqa: PLC0415
        from ..models.selection import Selection # noqa: PLC0415
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        def _parse_default_latency_ms(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        default_latency_ms = _parse_default_latency_ms(d.pop("default_latency_ms"))


        def _parse_default_min_accuracy(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        default_min_accuracy = _parse_default_min_accuracy(d.pop("default_min_accuracy"))


        name = d.pop("name")

        slo_policy = AppSloPolicy(d.pop("slo_policy"))




        cache = d.pop("cache", UNSET)

        _criticality = d.pop("criticality", UNSET)
        criticality: AppCriticality | Unset
        if isinstance(_criticality,  Unset):
            criticality = UNSET
        else:
            criticality = AppCriticality(_criticality)




        def _parse_default_output(data: object) -> AppDefaultOutputType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                default_output_type_0 = AppDefaultOutputType0.from_dict(data)



                return default_output_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AppDefaultOutputType0 | None | Unset, data)

        default_output = _parse_default_output(d.pop("default_output", UNSET))


        _keys = d.pop("keys", UNSET)
        keys: list[ApiKeyInfo] | Unset = UNSET
        if _keys is not UNSET:
            keys = []
            for keys_item_data in _keys:
                keys_item = ApiKeyInfo.from_dict(keys_item_data)



                keys.append(keys_item)


        lossy = d.pop("lossy", UNSET)

        models = cast(list[str], d.pop("models", UNSET))


        _prefer = d.pop("prefer", UNSET)
        prefer: AppPrefer | Unset
        if isinstance(_prefer,  Unset):
            prefer = UNSET
        else:
            prefer = AppPrefer(_prefer)




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




        warm_instances = d.pop("warm_instances", UNSET)

        app = cls(
            created_at=created_at,
            default_latency_ms=default_latency_ms,
            default_min_accuracy=default_min_accuracy,
            name=name,
            slo_policy=slo_policy,
            cache=cache,
            criticality=criticality,
            default_output=default_output,
            keys=keys,
            lossy=lossy,
            models=models,
            prefer=prefer,
            redundancy=redundancy,
            selection=selection,
            warm_instances=warm_instances,
        )


        app.additional_properties = d
        return app

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
