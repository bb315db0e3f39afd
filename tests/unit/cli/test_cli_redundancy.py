"""`infaas apps update --redundancy …`: what the option becomes in the PATCH body, and what is refused."""

from __future__ import annotations

import pytest
import typer

from infaas_cli.commands.apps import parse_redundancy


def test_none_and_parity_k() -> None:
    assert parse_redundancy("none") == {"kind": "none"}
    assert parse_redundancy("parity:3") == {"kind": "parity", "k": 3}
    # The server bounds k (2..4) and says why; the CLI only shapes the object.
    assert parse_redundancy("parity:9") == {"kind": "parity", "k": 9}


@pytest.mark.parametrize("text", ["parity", "parity:", "parity:x", "replicas:2", "", "PARITY:2"])
def test_other_forms_are_refused(text: str) -> None:
    with pytest.raises(typer.BadParameter, match="'none' or 'parity:K'"):
        parse_redundancy(text)
