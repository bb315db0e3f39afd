from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.parity_status_metric_type_0 import ParityStatusMetricType0
from ..models.parity_status_state import ParityStatusState
from typing import cast
import datetime






T = TypeVar("T", bound="ParityStatus")



@_attrs_define
class ParityStatus:
    """ A model's parity model: its training's progress and loss curve, and its degraded-mode score.

        Attributes:
            artifact_digest (None | str): The parity model's ONNX artifact, once trained.
            degraded_score (float | None): Degraded-mode score: of outputs reconstructed from the parity model and the other
                k−1 members' outputs, on the same held-out rows (never trained on).
            deployed_score (float | None): The deployed model's score on the held-out rows.
            generation (int):
            holdout_rows (int | None):
            k (int):
            losses (list[list[float | int]]): [(step, mean MSE over the steps since the last)]
            metric (None | ParityStatusMetricType0): accuracy for classification, R² for regression
            model (str):
            reason (None | str):
            state (ParityStatusState):
            steps_done (int):
            steps_total (int):
            train_rows (int | None):
            train_seconds (float | None):
            updated_at (datetime.datetime):
     """

    artifact_digest: None | str
    degraded_score: float | None
    deployed_score: float | None
    generation: int
    holdout_rows: int | None
    k: int
    losses: list[list[float | int]]
    metric: None | ParityStatusMetricType0
    model: str
    reason: None | str
    state: ParityStatusState
    steps_done: int
    steps_total: int
    train_rows: int | None
    train_seconds: float | None
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        artifact_digest: None | str
        artifact_digest = self.artifact_digest

        degraded_score: float | None
        degraded_score = self.degraded_score

        deployed_score: float | None
        deployed_score = self.deployed_score

        generation = self.generation

        holdout_rows: int | None
        holdout_rows = self.holdout_rows

        k = self.k

        losses = []
        for losses_item_data in self.losses:
            losses_item = []
            for losses_item_item_data in losses_item_data:
                losses_item_item: float | int
                losses_item_item = losses_item_item_data
                losses_item.append(losses_item_item)


            losses.append(losses_item)



        metric: None | str
        if isinstance(self.metric, ParityStatusMetricType0):
            metric = self.metric.value
        else:
            metric = self.metric

        model = self.model

        reason: None | str
        reason = self.reason

        state = self.state.value

        steps_done = self.steps_done

        steps_total = self.steps_total

        train_rows: int | None
        train_rows = self.train_rows

        train_seconds: float | None
        train_seconds = self.train_seconds

        updated_at = self.updated_at.isoformat()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "artifact_digest": artifact_digest,
            "degraded_score": degraded_score,
            "deployed_score": deployed_score,
            "generation": generation,
            "holdout_rows": holdout_rows,
            "k": k,
            "losses": losses,
            "metric": metric,
            "model": model,
            "reason": reason,
            "state": state,
            "steps_done": steps_done,
            "steps_total": steps_total,
            "train_rows": train_rows,
            "train_seconds": train_seconds,
            "updated_at": updated_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_artifact_digest(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        artifact_digest = _parse_artifact_digest(d.pop("artifact_digest"))


        def _parse_degraded_score(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        degraded_score = _parse_degraded_score(d.pop("degraded_score"))


        def _parse_deployed_score(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        deployed_score = _parse_deployed_score(d.pop("deployed_score"))


        generation = d.pop("generation")

        def _parse_holdout_rows(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        holdout_rows = _parse_holdout_rows(d.pop("holdout_rows"))


        k = d.pop("k")

        losses = []
        _losses = d.pop("losses")
        for losses_item_data in (_losses):
            losses_item = []
            _losses_item = losses_item_data
            for losses_item_item_data in (_losses_item):
                def _parse_losses_item_item(data: object) -> float | int:
                    return cast(float | int, data)

                losses_item_item = _parse_losses_item_item(losses_item_item_data)

                losses_item.append(losses_item_item)

            losses.append(losses_item)


        def _parse_metric(data: object) -> None | ParityStatusMetricType0:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                metric_type_0 = ParityStatusMetricType0(data)



                return metric_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ParityStatusMetricType0, data)

        metric = _parse_metric(d.pop("metric"))


        model = d.pop("model")

        def _parse_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reason = _parse_reason(d.pop("reason"))


        state = ParityStatusState(d.pop("state"))




        steps_done = d.pop("steps_done")

        steps_total = d.pop("steps_total")

        def _parse_train_rows(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        train_rows = _parse_train_rows(d.pop("train_rows"))


        def _parse_train_seconds(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        train_seconds = _parse_train_seconds(d.pop("train_seconds"))


        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))




        parity_status = cls(
            artifact_digest=artifact_digest,
            degraded_score=degraded_score,
            deployed_score=deployed_score,
            generation=generation,
            holdout_rows=holdout_rows,
            k=k,
            losses=losses,
            metric=metric,
            model=model,
            reason=reason,
            state=state,
            steps_done=steps_done,
            steps_total=steps_total,
            train_rows=train_rows,
            train_seconds=train_seconds,
            updated_at=updated_at,
        )


        parity_status.additional_properties = d
        return parity_status

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
