"""The committed SDK (`sdk/python/`) and schema (`sdk/openapi.json`) are what the gateway's OpenAPI
generates today: a route or schema change without `make sdk` fails here."""

from __future__ import annotations

import importlib.util
import pkgutil
import shutil
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sdk_generate", ROOT / "sdk" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_sdk_matches_a_fresh_generation() -> None:
    changed = load_generator().check()
    assert changed == [], "the SDK is out of date; run `make sdk` (sdk/generate.py). Differs: " + ", ".join(
        changed
    )


def test_the_drift_check_sees_a_changed_file(tmp_path: Path) -> None:
    generator = load_generator()
    fresh, edited = tmp_path / "fresh", tmp_path / "edited"
    generator.generate(fresh)
    shutil.copytree(fresh, edited)
    assert generator.differences(fresh, edited) == []
    (edited / "infaas_client" / "client.py").write_text("# edited by hand\n")
    (edited / "infaas_client" / "extra.py").write_text("")
    assert generator.differences(fresh, edited) == [
        "infaas_client/client.py",
        "infaas_client/extra.py (only in sdk/python)",
    ]


def test_every_generated_module_imports() -> None:
    # A generator bug (e.g. a name used but not imported) would otherwise surface only in a user's code.
    import infaas_client

    names = [m.name for m in pkgutil.walk_packages(infaas_client.__path__, "infaas_client.")]
    assert "infaas_client.api.oip.v2_infer" in names and "infaas_client.api.default.infer_app" in names
    for name in names:
        importlib.import_module(name)
