from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.branch_condition import BranchCondition
  from ..models.pipeline_edge_inputs import PipelineEdgeInputs





T = TypeVar("T", bound="PipelineEdge")



@_attrs_define
class PipelineEdge:
    """ 
        Attributes:
            inputs (PipelineEdgeInputs): How the source's output becomes the target's input: {target input: source output}.
            source (str): Upstream stage.
            target (str): Downstream stage.
            when (BranchCondition | None | Unset): A conditional branch (None: every row).
     """

    inputs: PipelineEdgeInputs
    source: str
    target: str
    when: BranchCondition | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.branch_condition import BranchCondition # noqa: PLC0415
        from ..models.pipeline_edge_inputs import PipelineEdgeInputs # noqa: PLC0415
        inputs = self.inputs.to_dict()

        source = self.source

        target = self.target

        when: dict[str, Any] | None | Unset
        if isinstance(self.when, Unset):
            when = UNSET
        elif isinstance(self.when, BranchCondition):
            when = self.when.to_dict()
        else:
            when = self.when


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "inputs": inputs,
            "source": source,
            "target": target,
        })
        if when is not UNSET:
            field_dict["when"] = when

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.branch_condition import BranchCondition # noqa: PLC0415
        from ..models.pipeline_edge_inputs import PipelineEdgeInputs # noqa: PLC0415
        d = dict(src_dict)
        inputs = PipelineEdgeInputs.from_dict(d.pop("inputs"))




        source = d.pop("source")

        target = d.pop("target")

        def _parse_when(data: object) -> BranchCondition | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                when_type_0 = BranchCondition.from_dict(data)



                return when_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BranchCondition | None | Unset, data)

        when = _parse_when(d.pop("when", UNSET))


        pipeline_edge = cls(
            inputs=inputs,
            source=source,
            target=target,
            when=when,
        )

        return pipeline_edge

