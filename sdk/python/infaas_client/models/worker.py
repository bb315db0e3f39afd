from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.worker_instances import WorkerInstances





T = TypeVar("T", bound="Worker")



@_attrs_define
class Worker:
    """ 
        Attributes:
            cores (int):
            hardware (str):
            id (str):
            last_seen_at (datetime.datetime):
            memory_bytes (int):
            registered_at (datetime.datetime):
            url (str):
            instances (WorkerInstances | Unset): variant id → instance state
            live (bool | Unset):  Default: False.
            utilization (float | None | Unset):
     """

    cores: int
    hardware: str
    id: str
    last_seen_at: datetime.datetime
    memory_bytes: int
    registered_at: datetime.datetime
    url: str
    instances: WorkerInstances | Unset = UNSET
    live: bool | Unset = False
    utilization: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.worker_instances import WorkerInstances # noqa: PLC0415
        cores = self.cores

        hardware = self.hardware

        id = self.id

        last_seen_at = self.last_seen_at.isoformat()

        memory_bytes = self.memory_bytes

        registered_at = self.registered_at.isoformat()

        url = self.url

        instances: dict[str, Any] | Unset = UNSET
        if not isinstance(self.instances, Unset):
            instances = self.instances.to_dict()

        live = self.live

        utilization: float | None | Unset
        if isinstance(self.utilization, Unset):
            utilization = UNSET
        else:
            utilization = self.utilization


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "cores": cores,
            "hardware": hardware,
            "id": id,
            "last_seen_at": last_seen_at,
            "memory_bytes": memory_bytes,
            "registered_at": registered_at,
            "url": url,
        })
        if instances is not UNSET:
            field_dict["instances"] = instances
        if live is not UNSET:
            field_dict["live"] = live
        if utilization is not UNSET:
            field_dict["utilization"] = utilization

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.worker_instances import WorkerInstances # noqa: PLC0415
        d = dict(src_dict)
        cores = d.pop("cores")

        hardware = d.pop("hardware")

        id = d.pop("id")

        last_seen_at = datetime.datetime.fromisoformat(d.pop("last_seen_at"))




        memory_bytes = d.pop("memory_bytes")

        registered_at = datetime.datetime.fromisoformat(d.pop("registered_at"))




        url = d.pop("url")

        _instances = d.pop("instances", UNSET)
        instances: WorkerInstances | Unset
        if isinstance(_instances,  Unset):
            instances = UNSET
        else:
            instances = WorkerInstances.from_dict(_instances)




        live = d.pop("live", UNSET)

        def _parse_utilization(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        utilization = _parse_utilization(d.pop("utilization", UNSET))


        worker = cls(
            cores=cores,
            hardware=hardware,
            id=id,
            last_seen_at=last_seen_at,
            memory_bytes=memory_bytes,
            registered_at=registered_at,
            url=url,
            instances=instances,
            live=live,
            utilization=utilization,
        )


        worker.additional_properties = d
        return worker

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
