from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.selection_report_policy import SelectionReportPolicy
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.head_report import HeadReport
  from ..models.missing_model import MissingModel
  from ..models.selection_report_weights import SelectionReportWeights





T = TypeVar("T", bound="SelectionReport")



@_attrs_define
class SelectionReport:
    """ What the selection layer did for one query (the `selection` of its `/v1` answer).

        Attributes:
            answered (list[str]): The models whose answers were combined.
            chosen (None | str): Exp3: the model the bandit drew for this query.
            feedback (None | str): Where to send the true labels of this query's rows; null when no model's answer was kept
                to learn from (the app's default output answered).
            missing (list[MissingModel]): Models sent the query whose answers are not in it.
            models (list[str]): The models selected among.
            policy (SelectionReportPolicy):
            user (None | str): The end user the query named, if any.
            weights (SelectionReportWeights): The selection's weights per model when it answered.
            confidence (list[float] | None | Unset): Per row, the fraction of answering models that agree.
            labels (list[int] | None | Unset): The combined label of each row.
            personalized (HeadReport | None | Unset): The user's head, when it personalized the answer.
            probability (float | None | Unset): Exp3: the probability it was drawn with.
     """

    answered: list[str]
    chosen: None | str
    feedback: None | str
    missing: list[MissingModel]
    models: list[str]
    policy: SelectionReportPolicy
    user: None | str
    weights: SelectionReportWeights
    confidence: list[float] | None | Unset = UNSET
    labels: list[int] | None | Unset = UNSET
    personalized: HeadReport | None | Unset = UNSET
    probability: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.head_report import HeadReport # noqa: PLC0415
        from ..models.missing_model import MissingModel # noqa: PLC0415
        from ..models.selection_report_weights import SelectionReportWeights # noqa: PLC0415
        answered = self.answered



        chosen: None | str
        chosen = self.chosen

        feedback: None | str
        feedback = self.feedback

        missing = []
        for missing_item_data in self.missing:
            missing_item = missing_item_data.to_dict()
            missing.append(missing_item)



        models = self.models



        policy = self.policy.value

        user: None | str
        user = self.user

        weights = self.weights.to_dict()

        confidence: list[float] | None | Unset
        if isinstance(self.confidence, Unset):
            confidence = UNSET
        elif isinstance(self.confidence, list):
            confidence = self.confidence


        else:
            confidence = self.confidence

        labels: list[int] | None | Unset
        if isinstance(self.labels, Unset):
            labels = UNSET
        elif isinstance(self.labels, list):
            labels = self.labels


        else:
            labels = self.labels

        personalized: dict[str, Any] | None | Unset
        if isinstance(self.personalized, Unset):
            personalized = UNSET
        elif isinstance(self.personalized, HeadReport):
            personalized = self.personalized.to_dict()
        else:
            personalized = self.personalized

        probability: float | None | Unset
        if isinstance(self.probability, Unset):
            probability = UNSET
        else:
            probability = self.probability


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "answered": answered,
            "chosen": chosen,
            "feedback": feedback,
            "missing": missing,
            "models": models,
            "policy": policy,
            "user": user,
            "weights": weights,
        })
        if confidence is not UNSET:
            field_dict["confidence"] = confidence
        if labels is not UNSET:
            field_dict["labels"] = labels
        if personalized is not UNSET:
            field_dict["personalized"] = personalized
        if probability is not UNSET:
            field_dict["probability"] = probability

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.head_report import HeadReport # noqa: PLC0415
        from ..models.missing_model import MissingModel # noqa: PLC0415
        from ..models.selection_report_weights import SelectionReportWeights # noqa: PLC0415
        d = dict(src_dict)
        answered = cast(list[str], d.pop("answered"))


        def _parse_chosen(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        chosen = _parse_chosen(d.pop("chosen"))


        def _parse_feedback(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        feedback = _parse_feedback(d.pop("feedback"))


        missing = []
        _missing = d.pop("missing")
        for missing_item_data in (_missing):
            missing_item = MissingModel.from_dict(missing_item_data)



            missing.append(missing_item)


        models = cast(list[str], d.pop("models"))


        policy = SelectionReportPolicy(d.pop("policy"))




        def _parse_user(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        user = _parse_user(d.pop("user"))


        weights = SelectionReportWeights.from_dict(d.pop("weights"))




        def _parse_confidence(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                confidence_type_0 = cast(list[float], data)

                return confidence_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        confidence = _parse_confidence(d.pop("confidence", UNSET))


        def _parse_labels(data: object) -> list[int] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                labels_type_0 = cast(list[int], data)

                return labels_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[int] | None | Unset, data)

        labels = _parse_labels(d.pop("labels", UNSET))


        def _parse_personalized(data: object) -> HeadReport | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                personalized_type_0 = HeadReport.from_dict(data)



                return personalized_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(HeadReport | None | Unset, data)

        personalized = _parse_personalized(d.pop("personalized", UNSET))


        def _parse_probability(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        probability = _parse_probability(d.pop("probability", UNSET))


        selection_report = cls(
            answered=answered,
            chosen=chosen,
            feedback=feedback,
            missing=missing,
            models=models,
            policy=policy,
            user=user,
            weights=weights,
            confidence=confidence,
            labels=labels,
            personalized=personalized,
            probability=probability,
        )


        selection_report.additional_properties = d
        return selection_report

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
