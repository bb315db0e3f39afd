from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.inference_request_parameters_task_type_0 import InferenceRequestParametersTaskType0
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="InferenceRequestParameters")



@_attrs_define
class InferenceRequestParameters:
    """ Requirements of the query (model-less on an app, or on a named model) and answer options.

        Attributes:
            binary_data_output (bool | None | Unset): Answer every output as binary data.
            latency_ms (float | None | Unset): Latency SLO of this query; the app's default when omitted.
            max_cost (float | None | Unset): Cost cap in $ for this query: a variant's profiled $ per row × the rows sent.
            min_accuracy (float | None | Unset): Lowest acceptable accuracy; the app's default when omitted.
            task (InferenceRequestParametersTaskType0 | None | Unset): Answer with a model of this task. Needed by a model-
                less query only where the app has models of several tasks that take its inputs; a named-model query's is its
                model's.
            variant (None | str | Unset): Named-model queries only: run exactly this variant (for benchmarks and tests).
     """

    binary_data_output: bool | None | Unset = UNSET
    latency_ms: float | None | Unset = UNSET
    max_cost: float | None | Unset = UNSET
    min_accuracy: float | None | Unset = UNSET
    task: InferenceRequestParametersTaskType0 | None | Unset = UNSET
    variant: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        binary_data_output: bool | None | Unset
        if isinstance(self.binary_data_output, Unset):
            binary_data_output = UNSET
        else:
            binary_data_output = self.binary_data_output

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
        elif isinstance(self.task, InferenceRequestParametersTaskType0):
            task = self.task.value
        else:
            task = self.task

        variant: None | str | Unset
        if isinstance(self.variant, Unset):
            variant = UNSET
        else:
            variant = self.variant


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if binary_data_output is not UNSET:
            field_dict["binary_data_output"] = binary_data_output
        if latency_ms is not UNSET:
            field_dict["latency_ms"] = latency_ms
        if max_cost is not UNSET:
            field_dict["max_cost"] = max_cost
        if min_accuracy is not UNSET:
            field_dict["min_accuracy"] = min_accuracy
        if task is not UNSET:
            field_dict["task"] = task
        if variant is not UNSET:
            field_dict["variant"] = variant

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_binary_data_output(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        binary_data_output = _parse_binary_data_output(d.pop("binary_data_output", UNSET))


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


        def _parse_task(data: object) -> InferenceRequestParametersTaskType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                task_type_0 = InferenceRequestParametersTaskType0(data)



                return task_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(InferenceRequestParametersTaskType0 | None | Unset, data)

        task = _parse_task(d.pop("task", UNSET))


        def _parse_variant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        variant = _parse_variant(d.pop("variant", UNSET))


        inference_request_parameters = cls(
            binary_data_output=binary_data_output,
            latency_ms=latency_ms,
            max_cost=max_cost,
            min_accuracy=min_accuracy,
            task=task,
            variant=variant,
        )

        return inference_request_parameters

