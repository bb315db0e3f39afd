from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="BranchCondition")



@_attrs_define
class BranchCondition:
    """ Rows go on along a conditional edge when the class their source stage predicts (the argmax of
    `output`) is one of `classes` (e.g. only what a detector calls "vehicle" reaches the classifier).

        Attributes:
            classes (list[int]): Argmax classes that go on.
            output (str): An output of the edge's source stage.
     """

    classes: list[int]
    output: str





    def to_dict(self) -> dict[str, Any]:
        classes = self.classes



        output = self.output


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "classes": classes,
            "output": output,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        classes = cast(list[int], d.pop("classes"))


        output = d.pop("output")

        branch_condition = cls(
            classes=classes,
            output=output,
        )

        return branch_condition

