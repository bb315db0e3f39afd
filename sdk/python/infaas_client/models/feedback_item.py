from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="FeedbackItem")



@_attrs_define
class FeedbackItem:
    """ The true labels of an earlier query's rows (one class index per row), by its request id.

        Attributes:
            labels (list[int]):
            query_id (str):
     """

    labels: list[int]
    query_id: str





    def to_dict(self) -> dict[str, Any]:
        labels = self.labels



        query_id = self.query_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "labels": labels,
            "query_id": query_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        labels = cast(list[int], d.pop("labels"))


        query_id = d.pop("query_id")

        feedback_item = cls(
            labels=labels,
            query_id=query_id,
        )

        return feedback_item

