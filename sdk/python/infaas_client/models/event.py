from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.event_kind import EventKind
from ..models.event_outcome import EventOutcome
from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.event_details_type_0 import EventDetailsType0





T = TypeVar("T", bound="Event")



@_attrs_define
class Event:
    """ One scaling, recovery or restart decision, or its outcome.

        Attributes:
            action (str): replicate, upgrade, downgrade, remove, load, migrate, request_worker, add_worker, drain_worker,
                exited, restarted, crash_loop, republish, delete, reprofile, declared, recovered, …
            at (datetime.datetime):
            id (int):
            kind (EventKind):
            outcome (EventOutcome):
            reason (str): why this was decided or happened, with the numbers used
            details (EventDetailsType0 | None | Unset):
            model (None | str | Unset):
            variant (None | str | Unset):
            worker (None | str | Unset):
     """

    action: str
    at: datetime.datetime
    id: int
    kind: EventKind
    outcome: EventOutcome
    reason: str
    details: EventDetailsType0 | None | Unset = UNSET
    model: None | str | Unset = UNSET
    variant: None | str | Unset = UNSET
    worker: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.event_details_type_0 import EventDetailsType0 # noqa: PLC0415
        action = self.action

        at = self.at.isoformat()

        id = self.id

        kind = self.kind.value

        outcome = self.outcome.value

        reason = self.reason

        details: dict[str, Any] | None | Unset
        if isinstance(self.details, Unset):
            details = UNSET
        elif isinstance(self.details, EventDetailsType0):
            details = self.details.to_dict()
        else:
            details = self.details

        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        variant: None | str | Unset
        if isinstance(self.variant, Unset):
            variant = UNSET
        else:
            variant = self.variant

        worker: None | str | Unset
        if isinstance(self.worker, Unset):
            worker = UNSET
        else:
            worker = self.worker


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "action": action,
            "at": at,
            "id": id,
            "kind": kind,
            "outcome": outcome,
            "reason": reason,
        })
        if details is not UNSET:
            field_dict["details"] = details
        if model is not UNSET:
            field_dict["model"] = model
        if variant is not UNSET:
            field_dict["variant"] = variant
        if worker is not UNSET:
            field_dict["worker"] = worker

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.event_details_type_0 import EventDetailsType0 # noqa: PLC0415
        d = dict(src_dict)
        action = d.pop("action")

        at = datetime.datetime.fromisoformat(d.pop("at"))




        id = d.pop("id")

        kind = EventKind(d.pop("kind"))




        outcome = EventOutcome(d.pop("outcome"))




        reason = d.pop("reason")

        def _parse_details(data: object) -> EventDetailsType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                details_type_0 = EventDetailsType0.from_dict(data)



                return details_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EventDetailsType0 | None | Unset, data)

        details = _parse_details(d.pop("details", UNSET))


        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))


        def _parse_variant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        variant = _parse_variant(d.pop("variant", UNSET))


        def _parse_worker(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        worker = _parse_worker(d.pop("worker", UNSET))


        event = cls(
            action=action,
            at=at,
            id=id,
            kind=kind,
            outcome=outcome,
            reason=reason,
            details=details,
            model=model,
            variant=variant,
            worker=worker,
        )


        event.additional_properties = d
        return event

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
