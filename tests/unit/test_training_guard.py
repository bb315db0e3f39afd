"""The unit tier's training guard (tests/unit/conftest.py): no unit test gets a demo model trained."""

from __future__ import annotations

from pathlib import Path

import pytest

from infaas_cli.demo_models import DEMO_MODEL_NAMES, build_demo_models


@pytest.mark.parametrize("fixture", ["demo_models", "small_model"])
def test_asking_for_the_demo_models_fails_the_test(request: pytest.FixtureRequest, fixture: str) -> None:
    with pytest.raises(pytest.fail.Exception, match="unit tests train no model"):
        request.getfixturevalue(fixture)


def test_building_them_directly_fails_where_it_would_train(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match="trained a demo model"):
        build_demo_models(tmp_path, names=[DEMO_MODEL_NAMES[0]])
