from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.feedback_result_models import FeedbackResultModels
  from ..models.feedback_result_weights import FeedbackResultWeights
  from ..models.head_report import HeadReport





T = TypeVar("T", bound="FeedbackResult")



@_attrs_define
class FeedbackResult:
    """ 
        Attributes:
            accuracy (float): The fraction of the query's rows the answer got right.
            models (FeedbackResultModels): Each answering model's accuracy on those rows.
            query_id (str):
            weights (FeedbackResultWeights): The selection's weights after this feedback.
            personalized (HeadReport | None | Unset): The user's head after this feedback.
     """

    accuracy: float
    models: FeedbackResultModels
    query_id: str
    weights: FeedbackResultWeights
    personalized: HeadReport | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.feedback_result_models import FeedbackResultModels # noqa: PLC0415
        from ..models.feedback_result_weights import FeedbackResultWeights # noqa: PLC0415
        from ..models.head_report import HeadReport # noqa: PLC0415
        accuracy = self.accuracy

        models = self.models.to_dict()

        query_id = self.query_id

        weights = self.weights.to_dict()

        personalized: dict[str, Any] | None | Unset
        if isinstance(self.personalized, Unset):
            personalized = UNSET
        elif isinstance(self.personalized, HeadReport):
            personalized = self.personalized.to_dict()
        else:
            personalized = self.personalized


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "accuracy": accuracy,
            "models": models,
            "query_id": query_id,
            "weights": weights,
        })
        if personalized is not UNSET:
            field_dict["personalized"] = personalized

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.feedback_result_models import FeedbackResultModels # noqa: PLC0415
        from ..models.feedback_result_weights import FeedbackResultWeights # noqa: PLC0415
        from ..models.head_report import HeadReport # noqa: PLC0415
        d = dict(src_dict)
        accuracy = d.pop("accuracy")

        models = FeedbackResultModels.from_dict(d.pop("models"))




        query_id = d.pop("query_id")

        weights = FeedbackResultWeights.from_dict(d.pop("weights"))




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


        feedback_result = cls(
            accuracy=accuracy,
            models=models,
            query_id=query_id,
            weights=weights,
            personalized=personalized,
        )


        feedback_result.additional_properties = d
        return feedback_result

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
