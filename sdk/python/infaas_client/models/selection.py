from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.selection_policy import SelectionPolicy
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Selection")



@_attrs_define
class Selection:
    """ How an app's queries choose among its models. `single`: the scheduler picks a variant of one model
    (the default); `exp3`: a bandit sends each query to one of `models`; `exp4`: every query goes to all of
    `models` and their labels are combined by learned weights. Feedback moves the weights.

        Attributes:
            eta (float | Unset): Learning rate of the weights. Default: 0.1.
            feedback_ttl_s (int | Unset): How long a query's answer waits for its feedback. Default: 3600.
            gamma (float | Unset): Exp3's uniform exploration. Default: 0.1.
            models (list[str] | Unset): The models selected among: 2..16 of the app's models with one task and the same
                input and output signature (required for exp3/exp4).
            personalize (bool | Unset): Velox: a linear head per `user` over the scores, learned from feedback. Default:
                False.
            policy (SelectionPolicy | Unset):  Default: SelectionPolicy.SINGLE.
            threshold (float | Unset): Below this confidence (the fraction of answering models that agree) the app's default
                output is returned instead, marked `default: true` (needs `default_output`). Default: 0.0.
     """

    eta: float | Unset = 0.1
    feedback_ttl_s: int | Unset = 3600
    gamma: float | Unset = 0.1
    models: list[str] | Unset = UNSET
    personalize: bool | Unset = False
    policy: SelectionPolicy | Unset = SelectionPolicy.SINGLE
    threshold: float | Unset = 0.0





    def to_dict(self) -> dict[str, Any]:
        eta = self.eta

        feedback_ttl_s = self.feedback_ttl_s

        gamma = self.gamma

        models: list[str] | Unset = UNSET
        if not isinstance(self.models, Unset):
            models = self.models



        personalize = self.personalize

        policy: str | Unset = UNSET
        if not isinstance(self.policy, Unset):
            policy = self.policy.value


        threshold = self.threshold


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if eta is not UNSET:
            field_dict["eta"] = eta
        if feedback_ttl_s is not UNSET:
            field_dict["feedback_ttl_s"] = feedback_ttl_s
        if gamma is not UNSET:
            field_dict["gamma"] = gamma
        if models is not UNSET:
            field_dict["models"] = models
        if personalize is not UNSET:
            field_dict["personalize"] = personalize
        if policy is not UNSET:
            field_dict["policy"] = policy
        if threshold is not UNSET:
            field_dict["threshold"] = threshold

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        eta = d.pop("eta", UNSET)

        feedback_ttl_s = d.pop("feedback_ttl_s", UNSET)

        gamma = d.pop("gamma", UNSET)

        models = cast(list[str], d.pop("models", UNSET))


        personalize = d.pop("personalize", UNSET)

        _policy = d.pop("policy", UNSET)
        policy: SelectionPolicy | Unset
        if isinstance(_policy,  Unset):
            policy = UNSET
        else:
            policy = SelectionPolicy(_policy)




        threshold = d.pop("threshold", UNSET)

        selection = cls(
            eta=eta,
            feedback_ttl_s=feedback_ttl_s,
            gamma=gamma,
            models=models,
            personalize=personalize,
            policy=policy,
            threshold=threshold,
        )

        return selection

