from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.redundancy_kind import RedundancyKind
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Redundancy")



@_attrs_define
class Redundancy:
    """ An app's coded redundancy: `none`, or `parity` with coding groups of `k` queries (2..4).

        Attributes:
            k (int | None | Unset): Queries per coding group (parity only): one parity query per k, so 1/k more resources;
                larger k costs less and reconstructs less accurately.
            kind (RedundancyKind | Unset):  Default: RedundancyKind.NONE.
     """

    k: int | None | Unset = UNSET
    kind: RedundancyKind | Unset = RedundancyKind.NONE





    def to_dict(self) -> dict[str, Any]:
        k: int | None | Unset
        if isinstance(self.k, Unset):
            k = UNSET
        else:
            k = self.k

        kind: str | Unset = UNSET
        if not isinstance(self.kind, Unset):
            kind = self.kind.value



        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if k is not UNSET:
            field_dict["k"] = k
        if kind is not UNSET:
            field_dict["kind"] = kind

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_k(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        k = _parse_k(d.pop("k", UNSET))


        _kind = d.pop("kind", UNSET)
        kind: RedundancyKind | Unset
        if isinstance(_kind,  Unset):
            kind = UNSET
        else:
            kind = RedundancyKind(_kind)




        redundancy = cls(
            k=k,
            kind=kind,
        )

        return redundancy

