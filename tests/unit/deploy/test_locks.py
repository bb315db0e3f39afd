"""The locks (requirements/*.txt, written by `make lock`) hold what pyproject.toml asks for: a dependency
added or a range moved without `make lock` fails here, not on a machine that installs a stale lock.

What the Makefile installs beside them is checked too: torch, kept out of the locks, pinned as
pyproject.toml pins it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
MAKEFILE = (ROOT / "Makefile").read_text()
LOCKS = {"runtime": "requirements/runtime.txt", "dev": "requirements/dev.txt", "gpu": "requirements/gpu.txt"}
KEPT_OUT = {"torch"}  # installed by the Makefile after the locks (its comment says why)

Pins = dict[str, tuple[Version, list[str]]]


def pins(lock: str) -> Pins:
    """name -> (version, hashes) of every `name==version` entry of a pip-compile lock."""
    found: Pins = {}
    for entry in re.split(r"\n(?=\S)", (ROOT / lock).read_text()):
        if entry.startswith(("#", "-")) or not entry.strip():
            continue
        head = entry.split("\\", 1)[0].split(";", 1)[0].strip()
        name, _, version = head.partition("==")
        assert version, f"{lock}: {head!r} is not pinned with =="
        found[canonicalize_name(name)] = (
            Version(version),
            re.findall(r"--hash=(sha256:[0-9a-f]{64})", entry),
        )
    return found


def wanted(*extras: str) -> list[Requirement]:
    """pyproject.toml's dependencies, its build requirements and the named extras."""
    specs = [*PYPROJECT["project"]["dependencies"], *PYPROJECT["build-system"]["requires"]]
    for extra in extras:
        specs += PYPROJECT["project"]["optional-dependencies"][extra]
    return [Requirement(spec) for spec in specs]


@pytest.mark.parametrize(("lock", "extras"), [("runtime", ()), ("dev", ("dev",)), ("gpu", ("gpu",))])
def test_each_lock_pins_what_pyproject_asks_for_in_its_range(lock: str, extras: tuple[str, ...]) -> None:
    locked = pins(LOCKS[lock])
    for req in wanted(*extras):
        name = canonicalize_name(req.name)
        if name in KEPT_OUT:
            assert name not in locked, f"{name} is installed beside the locks, not from them"
            continue
        assert name in locked, f"{req} is not in {LOCKS[lock]}: run `make lock`"
        version = locked[name][0]
        assert req.specifier.contains(version, prereleases=True), (
            f"{LOCKS[lock]} pins {name}=={version}: {req}"
        )


def test_every_pin_carries_hashes() -> None:
    for lock in LOCKS.values():
        for name, (_, hashes) in pins(lock).items():
            assert hashes, f"{lock}: {name} has no hash (`pip install --require-hashes` refuses it)"


@pytest.mark.parametrize("lock", ["dev", "gpu"])
def test_the_locks_agree_on_every_runtime_pin(lock: str) -> None:
    """They install on top of each other (`make test` on a GPU machine: dev, then gpu)."""
    runtime, other = pins(LOCKS["runtime"]), pins(LOCKS[lock])
    assert {n: v for n, (v, _) in runtime.items()} == {n: other[n][0] for n in runtime if n in other}
    assert set(runtime) <= set(other)


def test_the_makefile_installs_torch_as_pyproject_pins_it() -> None:
    (torch,) = [r for r in wanted() if r.name == "torch"]
    assert re.search(rf"^TORCH := torch{re.escape(str(torch.specifier))}$", MAKEFILE, re.MULTILINE), torch
