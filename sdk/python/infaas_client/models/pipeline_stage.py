from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="PipelineStage")



@_attrs_define
class PipelineStage:
    """ 
        Attributes:
            model (str): A registered model of the pipeline's app.
            name (str): The stage's name, unique in its pipeline.
            min_accuracy (float | None | Unset): Accuracy floor of this stage's variants.
     """

    model: str
    name: str
    min_accuracy: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        model = self.model

        name = self.name

        min_accuracy: float | None | Unset
        if isinstance(self.min_accuracy, Unset):
            min_accuracy = UNSET
        else:
            min_accuracy = self.min_accuracy


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "model": model,
            "name": name,
        })
        if min_accuracy is not UNSET:
            field_dict["min_accuracy"] = min_accuracy

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        model = d.pop("model")

        name = d.pop("name")

        def _parse_min_accuracy(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        min_accuracy = _parse_min_accuracy(d.pop("min_accuracy", UNSET))


        pipeline_stage = cls(
            model=model,
            name=name,
            min_accuracy=min_accuracy,
        )

        return pipeline_stage

