from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.job_state import JobState
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.job_decision import JobDecision
  from ..models.job_error import JobError





T = TypeVar("T", bound="Job")



@_attrs_define
class Job:
    """ An offline job and its progress.

        Attributes:
            app (str):
            chunk_rows (int):
            chunks_done (int):
            chunks_total (int):
            created_at (datetime.datetime):
            decision (JobDecision | None):
            errors (list[JobError]):
            eta_s (float | None): Seconds left at the current throughput.
            finished_at (datetime.datetime | None):
            id (str):
            input_source (str):
            model (str):
            output_path (None | str):
            progress (float): rows_done / rows_total
            reason (None | str): Why the job is in its state (pauses say what was too busy).
            result_url (None | str): Where to download the output `.npz` once succeeded.
            rows_done (int):
            rows_total (int):
            started_at (datetime.datetime | None):
            state (JobState):
            throughput_rows_s (float | None): Rows per second since the job started.
            variant (None | str):
     """

    app: str
    chunk_rows: int
    chunks_done: int
    chunks_total: int
    created_at: datetime.datetime
    decision: JobDecision | None
    errors: list[JobError]
    eta_s: float | None
    finished_at: datetime.datetime | None
    id: str
    input_source: str
    model: str
    output_path: None | str
    progress: float
    reason: None | str
    result_url: None | str
    rows_done: int
    rows_total: int
    started_at: datetime.datetime | None
    state: JobState
    throughput_rows_s: float | None
    variant: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.job_decision import JobDecision # noqa: PLC0415
        from ..models.job_error import JobError # noqa: PLC0415
        app = self.app

        chunk_rows = self.chunk_rows

        chunks_done = self.chunks_done

        chunks_total = self.chunks_total

        created_at = self.created_at.isoformat()

        decision: dict[str, Any] | None
        if isinstance(self.decision, JobDecision):
            decision = self.decision.to_dict()
        else:
            decision = self.decision

        errors = []
        for errors_item_data in self.errors:
            errors_item = errors_item_data.to_dict()
            errors.append(errors_item)



        eta_s: float | None
        eta_s = self.eta_s

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        id = self.id

        input_source = self.input_source

        model = self.model

        output_path: None | str
        output_path = self.output_path

        progress = self.progress

        reason: None | str
        reason = self.reason

        result_url: None | str
        result_url = self.result_url

        rows_done = self.rows_done

        rows_total = self.rows_total

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        state = self.state.value

        throughput_rows_s: float | None
        throughput_rows_s = self.throughput_rows_s

        variant: None | str
        variant = self.variant


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "app": app,
            "chunk_rows": chunk_rows,
            "chunks_done": chunks_done,
            "chunks_total": chunks_total,
            "created_at": created_at,
            "decision": decision,
            "errors": errors,
            "eta_s": eta_s,
            "finished_at": finished_at,
            "id": id,
            "input_source": input_source,
            "model": model,
            "output_path": output_path,
            "progress": progress,
            "reason": reason,
            "result_url": result_url,
            "rows_done": rows_done,
            "rows_total": rows_total,
            "started_at": started_at,
            "state": state,
            "throughput_rows_s": throughput_rows_s,
            "variant": variant,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.job_decision import JobDecision # noqa: PLC0415
        from ..models.job_error import JobError # noqa: PLC0415
        d = dict(src_dict)
        app = d.pop("app")

        chunk_rows = d.pop("chunk_rows")

        chunks_done = d.pop("chunks_done")

        chunks_total = d.pop("chunks_total")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        def _parse_decision(data: object) -> JobDecision | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                decision_type_0 = JobDecision.from_dict(data)



                return decision_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobDecision | None, data)

        decision = _parse_decision(d.pop("decision"))


        errors = []
        _errors = d.pop("errors")
        for errors_item_data in (_errors):
            errors_item = JobError.from_dict(errors_item_data)



            errors.append(errors_item)


        def _parse_eta_s(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        eta_s = _parse_eta_s(d.pop("eta_s"))


        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)



                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))


        id = d.pop("id")

        input_source = d.pop("input_source")

        model = d.pop("model")

        def _parse_output_path(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        output_path = _parse_output_path(d.pop("output_path"))


        progress = d.pop("progress")

        def _parse_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reason = _parse_reason(d.pop("reason"))


        def _parse_result_url(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        result_url = _parse_result_url(d.pop("result_url"))


        rows_done = d.pop("rows_done")

        rows_total = d.pop("rows_total")

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)



                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at"))


        state = JobState(d.pop("state"))




        def _parse_throughput_rows_s(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        throughput_rows_s = _parse_throughput_rows_s(d.pop("throughput_rows_s"))


        def _parse_variant(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        variant = _parse_variant(d.pop("variant"))


        job = cls(
            app=app,
            chunk_rows=chunk_rows,
            chunks_done=chunks_done,
            chunks_total=chunks_total,
            created_at=created_at,
            decision=decision,
            errors=errors,
            eta_s=eta_s,
            finished_at=finished_at,
            id=id,
            input_source=input_source,
            model=model,
            output_path=output_path,
            progress=progress,
            reason=reason,
            result_url=result_url,
            rows_done=rows_done,
            rows_total=rows_total,
            started_at=started_at,
            state=state,
            throughput_rows_s=throughput_rows_s,
            variant=variant,
        )


        job.additional_properties = d
        return job

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
