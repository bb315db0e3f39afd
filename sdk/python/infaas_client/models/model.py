from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.model_status import ModelStatus
from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.signature_out import SignatureOut
  from ..models.variant_progress import VariantProgress





T = TypeVar("T", bound="Model")



@_attrs_define
class Model:
    """ 
        Attributes:
            app (str):
            artifact_digest (str):
            created_at (datetime.datetime):
            format_ (str):
            name (str):
            progress (VariantProgress):
            signature (SignatureOut):
            size_bytes (int):
            status (ModelStatus):
            status_reason (None | str):
            task (str):
            updated_at (datetime.datetime):
            validation_rows (int):
            reference_accuracy (float | None | Unset): Accuracy of the model as registered, measured on its validation set
                (its fp32 forms on CPU); a query that states no accuracy is answered only by variants at least this accurate
                unless its app is `lossy`. Null until measured.
     """

    app: str
    artifact_digest: str
    created_at: datetime.datetime
    format_: str
    name: str
    progress: VariantProgress
    signature: SignatureOut
    size_bytes: int
    status: ModelStatus
    status_reason: None | str
    task: str
    updated_at: datetime.datetime
    validation_rows: int
    reference_accuracy: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.signature_out import SignatureOut # noqa: PLC0415
        from ..models.variant_progress import VariantProgress # noqa: PLC0415
        app = self.app

        artifact_digest = self.artifact_digest

        created_at = self.created_at.isoformat()

        format_ = self.format_

        name = self.name

        progress = self.progress.to_dict()

        signature = self.signature.to_dict()

        size_bytes = self.size_bytes

        status = self.status.value

        status_reason: None | str
        status_reason = self.status_reason

        task = self.task

        updated_at = self.updated_at.isoformat()

        validation_rows = self.validation_rows

        reference_accuracy: float | None | Unset
        if isinstance(self.reference_accuracy, Unset):
            reference_accuracy = UNSET
        else:
            reference_accuracy = self.reference_accuracy


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "app": app,
            "artifact_digest": artifact_digest,
            "created_at": created_at,
            "format": format_,
            "name": name,
            "progress": progress,
            "signature": signature,
            "size_bytes": size_bytes,
            "status": status,
            "status_reason": status_reason,
            "task": task,
            "updated_at": updated_at,
            "validation_rows": validation_rows,
        })
        if reference_accuracy is not UNSET:
            field_dict["reference_accuracy"] = reference_accuracy

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.signature_out import SignatureOut # noqa: PLC0415
        from ..models.variant_progress import VariantProgress # noqa: PLC0415
        d = dict(src_dict)
        app = d.pop("app")

        artifact_digest = d.pop("artifact_digest")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        format_ = d.pop("format")

        name = d.pop("name")

        progress = VariantProgress.from_dict(d.pop("progress"))




        signature = SignatureOut.from_dict(d.pop("signature"))




        size_bytes = d.pop("size_bytes")

        status = ModelStatus(d.pop("status"))




        def _parse_status_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        status_reason = _parse_status_reason(d.pop("status_reason"))


        task = d.pop("task")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))




        validation_rows = d.pop("validation_rows")

        def _parse_reference_accuracy(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        reference_accuracy = _parse_reference_accuracy(d.pop("reference_accuracy", UNSET))


        model = cls(
            app=app,
            artifact_digest=artifact_digest,
            created_at=created_at,
            format_=format_,
            name=name,
            progress=progress,
            signature=signature,
            size_bytes=size_bytes,
            status=status,
            status_reason=status_reason,
            task=task,
            updated_at=updated_at,
            validation_rows=validation_rows,
            reference_accuracy=reference_accuracy,
        )


        model.additional_properties = d
        return model

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
