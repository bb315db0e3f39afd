from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.infer_request_task_type_0 import InferRequestTaskType0
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.infer_request_inputs_type_1 import InferRequestInputsType1





T = TypeVar("T", bound="InferRequest")



@_attrs_define
class InferRequest:
    """ A query: a batch of inputs plus what the answer must achieve.

        Attributes:
            inputs (InferRequestInputsType1 | list[Any]): A batch: nested lists (one input) or {input name: nested lists}.
            latency_ms (float | None | Unset): Latency SLO of this query; the app's default when omitted.
            max_cost (float | None | Unset): Cost cap in $ for this query: a variant's profiled $ per row × the rows sent.
            min_accuracy (float | None | Unset): Lowest acceptable accuracy; the app's default when omitted.
            task (InferRequestTaskType0 | None | Unset): Answer with a model of this task. Needed by a model-less query only
                where the app has models of several tasks that take its inputs; a named-model query's is its model's.
            user (None | str | Unset): Apps with a selection policy only: the end user the answer is for (Velox's
                personalization learns a head per user from the feedback on their queries).
            variant (None | str | Unset): Named-model queries only: run exactly this variant (for benchmarks and tests).
     """

    inputs: InferRequestInputsType1 | list[Any]
    latency_ms: float | None | Unset = UNSET
    max_cost: float | None | Unset = UNSET
    min_accuracy: float | None | Unset = UNSET
    task: InferRequestTaskType0 | None | Unset = UNSET
    user: None | str | Unset = UNSET
    variant: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.infer_request_inputs_type_1 import InferRequestInputsType1 # noqa: PLC0415
        inputs: dict[str, Any] | list[Any]
        if isinstance(self.inputs, list):
            inputs = self.inputs


        else:
            inputs = self.inputs.to_dict()


        latency_ms: float | None | Unset
        if isinstance(self.latency_ms, Unset):
            latency_ms = UNSET
        else:
            latency_ms = self.latency_ms

        max_cost: float | None | Unset
        if isinstance(self.max_cost, Unset):
            max_cost = UNSET
        else:
            max_cost = self.max_cost

        min_accuracy: float | None | Unset
        if isinstance(self.min_accuracy, Unset):
            min_accuracy = UNSET
        else:
            min_accuracy = self.min_accuracy

        task: None | str | Unset
        if isinstance(self.task, Unset):
            task = UNSET
        elif isinstance(self.task, InferRequestTaskType0):
            task = self.task.value
        else:
            task = self.task

        user: None | str | Unset
        if isinstance(self.user, Unset):
            user = UNSET
        else:
            user = self.user

        variant: None | str | Unset
        if isinstance(self.variant, Unset):
            variant = UNSET
        else:
            variant = self.variant


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "inputs": inputs,
        })
        if latency_ms is not UNSET:
            field_dict["latency_ms"] = latency_ms
        if max_cost is not UNSET:
            field_dict["max_cost"] = max_cost
        if min_accuracy is not UNSET:
            field_dict["min_accuracy"] = min_accuracy
        if task is not UNSET:
            field_dict["task"] = task
        if user is not UNSET:
            field_dict["user"] = user
        if variant is not UNSET:
            field_dict["variant"] = variant

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.infer_request_inputs_type_1 import InferRequestInputsType1 # noqa: PLC0415
        d = dict(src_dict)
        def _parse_inputs(data: object) -> InferRequestInputsType1 | list[Any]:
            try:
                if not isinstance(data, list):
                    raise TypeError()
                inputs_type_0 = cast(list[Any], data)

                return inputs_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            inputs_type_1 = InferRequestInputsType1.from_dict(data)



            return inputs_type_1

        inputs = _parse_inputs(d.pop("inputs"))


        def _parse_latency_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        latency_ms = _parse_latency_ms(d.pop("latency_ms", UNSET))


        def _parse_max_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_cost = _parse_max_cost(d.pop("max_cost", UNSET))


        def _parse_min_accuracy(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        min_accuracy = _parse_min_accuracy(d.pop("min_accuracy", UNSET))


        def _parse_task(data: object) -> InferRequestTaskType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                task_type_0 = InferRequestTaskType0(data)



                return task_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(InferRequestTaskType0 | None | Unset, data)

        task = _parse_task(d.pop("task", UNSET))


        def _parse_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user = _parse_user(d.pop("user", UNSET))


        def _parse_variant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        variant = _parse_variant(d.pop("variant", UNSET))


        infer_request = cls(
            inputs=inputs,
            latency_ms=latency_ms,
            max_cost=max_cost,
            min_accuracy=min_accuracy,
            task=task,
            user=user,
            variant=variant,
        )


        infer_request.additional_properties = d
        return infer_request

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
