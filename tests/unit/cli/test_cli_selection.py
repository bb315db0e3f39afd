"""`infaas apps update --selection …`: the JSON object goes into the PATCH body as it is; not-an-object is
refused before any request."""

from __future__ import annotations

import pytest
import typer

from infaas_cli.commands.apps import parse_selection


def test_selection_json_object_is_the_body() -> None:
    assert parse_selection('{"policy": "exp3", "models": ["a", "b"], "eta": 0.2}') == {
        "policy": "exp3",
        "models": ["a", "b"],
        "eta": 0.2,
    }


@pytest.mark.parametrize("text", ["exp3", "[1, 2]", '{"policy": '])
def test_not_a_json_object_is_refused(text: str) -> None:
    with pytest.raises(typer.BadParameter, match="JSON object"):
        parse_selection(text)
