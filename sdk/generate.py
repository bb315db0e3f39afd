"""Regenerate the Python SDK (`sdk/python/`) from the gateway's OpenAPI, offline.

The schema comes from `gateway.app.create_app(Settings()).openapi()` — no server runs — and
`openapi-python-client` (pinned in pyproject.toml: its output is committed) writes the client. No
formatter runs afterwards, so the output depends only on the schema and the generator's version.

    .venv/bin/python sdk/generate.py            # or: make sdk
    .venv/bin/python sdk/generate.py --check    # exit 1 if sdk/python is out of date

`tests/unit/gateway/test_sdk_drift.py` runs the check.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SDK_DIR = ROOT / "sdk" / "python"
SCHEMA_FILE = ROOT / "sdk" / "openapi.json"
# What building or testing the package leaves beside the generated files (ignored by git, too).
_BUILD_OUTPUTS = ["__pycache__", ".pytest_cache", "build", "dist"]
CONFIG = {
    "project_name_override": "infaas-client",
    "package_name_override": "infaas_client",
    "post_hooks": [],
}


def openapi_schema() -> dict[str, object]:
    """The gateway's OpenAPI document, built in-process from the app factory."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from gateway.app import create_app
    from infaas.core.config import Settings

    schema: dict[str, object] = create_app(Settings(admin_key="sdk-generation")).openapi()
    return schema


def schema_text() -> str:
    return json.dumps(openapi_schema(), indent=2, sort_keys=True) + "\n"


def generate(out_dir: Path) -> None:
    """Write the client (package `infaas_client`, installable with pip) to `out_dir` (replaced)."""
    with tempfile.TemporaryDirectory(prefix="infaas-sdk-") as tmp:
        work = Path(tmp)
        (work / "openapi.json").write_text(schema_text())
        (work / "config.json").write_text(json.dumps(CONFIG))
        target = work / "out"
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "openapi_python_client",
                "generate",
                "--path",
                str(work / "openapi.json"),
                "--config",
                str(work / "config.json"),
                "--meta",
                "setup",
                "--output-path",
                str(target),
                "--fail-on-warning",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or not target.is_dir():
            raise SystemExit(f"openapi-python-client failed:\n{result.stdout}\n{result.stderr}")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.copytree(target, out_dir)


def differences(expected: Path, actual: Path) -> list[str]:
    """Relative paths that differ between two trees (missing on either side, or other bytes)."""
    out: list[str] = []

    def walk(cmp: filecmp.dircmp[str], prefix: str) -> None:
        out.extend(f"{prefix}{name} (only in the fresh generation)" for name in cmp.left_only)
        out.extend(f"{prefix}{name} (only in sdk/python)" for name in cmp.right_only)
        for name in cmp.common_files:
            if (Path(cmp.left) / name).read_bytes() != (Path(cmp.right) / name).read_bytes():
                out.append(f"{prefix}{name}")
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(expected, actual, ignore=_BUILD_OUTPUTS), "")
    return sorted(p for p in out if not p.split(" ")[0].endswith(".egg-info"))


def check() -> list[str]:
    """What regenerating would change (empty when the committed SDK and schema are up to date)."""
    with tempfile.TemporaryDirectory(prefix="infaas-sdk-check-") as tmp:
        fresh = Path(tmp) / "python"
        generate(fresh)
        changed = differences(fresh, SDK_DIR) if SDK_DIR.exists() else ["sdk/python (missing)"]
    committed = SCHEMA_FILE.read_text() if SCHEMA_FILE.exists() else ""
    if committed != schema_text():
        changed.insert(0, "sdk/openapi.json")
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only report drift; exit 1 if any")
    args = parser.parse_args()
    if args.check:
        changed = check()
        if changed:
            print("the SDK is out of date (run `make sdk`):\n  " + "\n  ".join(changed))
            raise SystemExit(1)
        print("sdk/python is up to date")
        return
    SCHEMA_FILE.write_text(schema_text())
    generate(SDK_DIR)
    print(f"wrote {SCHEMA_FILE.relative_to(ROOT)} and {SDK_DIR.relative_to(ROOT)}/")


if __name__ == "__main__":
    main()
