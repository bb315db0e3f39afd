"""The planner's room map: every module under services/planner is named in the docstring of its
package's `__init__.py` (or the planner's own), and in docs/architecture.md's "Code layout"."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PLANNER = ROOT / "services" / "planner"


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def test_every_planner_module_is_on_the_map() -> None:
    maps = {init.parent: _docstring(init) for init in PLANNER.rglob("__init__.py")}
    layout = (ROOT / "docs" / "architecture.md").read_text().split("## Code layout", 1)[1]
    layout = layout.split("\n### ", 1)[0]
    modules = sorted(p for p in PLANNER.rglob("*.py") if p.name != "__init__.py")
    assert modules
    unmapped = [
        str(p.relative_to(ROOT))
        for p in modules
        if f"`{p.name}`" not in maps[p.parent] and f"`{p.name}`" not in maps[PLANNER]
    ]
    undocumented = [str(p.relative_to(ROOT)) for p in modules if f"`{p.name}`" not in layout]
    assert unmapped == [] and undocumented == []
