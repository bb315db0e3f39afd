"""`infaas query -i …`: where a query's inputs may come from, and what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer

from infaas_cli.commands.query import load_inputs


def test_inputs_from_npy_npz_json_files_and_inline_json(tmp_path: Path) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    assert load_inputs(str(tmp_path / "x.npy")) == x.tolist()
    np.savez(tmp_path / "two.npz", a=x, b=np.array([[1], [2]]))
    assert load_inputs(str(tmp_path / "two.npz")) == {"a": x.tolist(), "b": [[1], [2]]}
    (tmp_path / "x.json").write_text(json.dumps({"a": [[1, 2]]}))
    assert load_inputs(str(tmp_path / "x.json")) == {"a": [[1, 2]]}
    assert load_inputs("[[0.5, 1.5]]") == [[0.5, 1.5]]


def test_pickles_missing_files_and_non_json_are_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "p.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(typer.BadParameter, match="without pickled objects"):
        load_inputs(str(tmp_path / "p.npy"))
    np.savez(tmp_path / "p.npz", x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(typer.BadParameter, match="without pickled objects"):
        load_inputs(str(tmp_path / "p.npz"))
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(typer.BadParameter, match="not a NumPy file"):
        load_inputs(str(tmp_path / "junk.npy"))
    with pytest.raises(typer.BadParameter, match="no such file"):
        load_inputs(str(tmp_path / "missing.npy"))
    with pytest.raises(typer.BadParameter, match="neither a .npy/.npz/.json file nor JSON"):
        load_inputs("[[1, 2]")
