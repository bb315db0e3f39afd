from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.selection_report_policy import SelectionReportPolicy
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
            confidence (list[float]): Per row, the fraction of answering models that agree.
            feedback (str): Where to send the true labels of this query's rows.
            labels (list[int]): The combined label of each row.
            missing (list[MissingModel]): Models sent the query whose answers are not in it.
            models (list[str]): The models selected among.
            personalized (HeadReport | None): The user's head, when it personalized the answer.
            policy (SelectionReportPolicy):
            probability (float | None): Exp3: the probability it was drawn with.
            user (None | str): The end user the query named, if any.
            weights (SelectionReportWeights): The selection's weights per model when it answered.
     """

    answered: list[str]
    chosen: None | str
    confidence: list[float]
    feedback: str
    labels: list[int]
    missing: list[MissingModel]
    models: list[str]
    personalized: HeadReport | None
    policy: SelectionReportPolicy
    probability: float | None
    user: None | str
    weights: SelectionReportWeights
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.head_report import HeadReport # noqa: PLC0415
        from ..models.missing_model import MissingModel # noqa: PLC0415
        from ..models.selection_report_weights import SelectionReportWeights # noqa: PLC0415
        answered = self.answered



        chosen: None | str
        chosen = self.chosen

        confidence = self.confidence



        feedback = self.feedback

        labels = self.labels



        missing = []
        for missing_item_data in self.missing:
            missing_item = missing_item_data.to_dict()
            missing.append(missing_item)



        models = self.models



        personalized: dict[str, Any] | None
        if isinstance(self.personalized, HeadReport):
            personalized = self.personalized.to_dict()
        else:
            personalized = self.personalized

        policy = self.policy.value

        probability: float | None
        probability = self.probability

        user: None | str
        user = self.user

        weights = self.weights.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "answered": answered,
            "chosen": chosen,
            "confidence": confidence,
            "feedback": feedback,
            "labels": labels,
            "missing": missing,
            "models": models,
            "personalized": personalized,
            "policy": policy,
            "probability": probability,
            "user": user,
            "weights": weights,
        })

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


        confidence = cast(list[float], d.pop("confidence"))


        feedback = d.pop("feedback")

        labels = cast(list[int], d.pop("labels"))


        missing = []
        _missing = d.pop("missing")
        for missing_item_data in (_missing):
            missing_item = MissingModel.from_dict(missing_item_data)



            missing.append(missing_item)


        models = cast(list[str], d.pop("models"))


        def _parse_personalized(data: object) -> HeadReport | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                personalized_type_0 = HeadReport.from_dict(data)



                return personalized_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(HeadReport | None, data)

        personalized = _parse_personalized(d.pop("personalized"))


        policy = SelectionReportPolicy(d.pop("policy"))




        def _parse_probability(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        probability = _parse_probability(d.pop("probability"))


        def _parse_user(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        user = _parse_user(d.pop("user"))


        weights = SelectionReportWeights.from_dict(d.pop("weights"))




        selection_report = cls(
            answered=answered,
            chosen=chosen,
            confidence=confidence,
            feedback=feedback,
            labels=labels,
            missing=missing,
            models=models,
            personalized=personalized,
            policy=policy,
            probability=probability,
            user=user,
            weights=weights,
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
