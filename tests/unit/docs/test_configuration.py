"""docs/configuration.md follows the settings classes: one `##` section per class of
`infaas/core/settings/`, named in its heading and in the order `Settings` composes them, whose tables
list exactly that class's own fields; every other `INFAAS_*` name the guide mentions is a setting or
one of the variables its "Outside the settings" section documents. A field added, moved between
classes or renamed fails here until the guide says so."""

from __future__ import annotations

import re
from pathlib import Path

from infaas.core.config import Settings
from infaas.core.settings.common import CommonSettings

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
OUTSIDE = "Outside the settings"

# Read by the CLI, the tests and docker-compose.yml, not by `Settings`: the guide's last section.
NON_SETTINGS = frozenset(
    {
        "INFAAS_URL",
        "INFAAS_KEY",
        "INFAAS_TEST_DATABASE_URL",
        "INFAAS_TEST_REDIS_URL",
        "INFAAS_REDIS_PASSWORD",
        "INFAAS_IMAGE_TARGET",
    }
)

_SECTION = re.compile(r"^## (.+)$", re.M)
_CLASS_IN_HEADING = re.compile(r"`(\w+Settings)`")
_VARIABLE = re.compile(r"INFAAS_[A-Z0-9]+(?:_[A-Z0-9]+)*")


def settings_classes() -> list[type[CommonSettings]]:
    """The classes in the order the guide lists them: the common base, then as `Settings` composes."""
    return [CommonSettings, *(base for base in Settings.__bases__ if issubclass(base, CommonSettings))]


def own_variables(cls: type[CommonSettings]) -> set[str]:
    inherited = set() if cls is CommonSettings else set(CommonSettings.model_fields)
    return {f"INFAAS_{name.upper()}" for name in set(cls.model_fields) - inherited}


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of every `##` section."""
    parts = _SECTION.split(text)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def table_variables(body: str) -> list[str]:
    """The variables a section's tables document: those in the first cell of each row."""
    found = []
    for line in body.splitlines():
        if line.startswith("| `INFAAS_"):
            found.extend(_VARIABLE.findall(line.split("|")[1]))
    return found


def problems(text: str, classes: list[type[CommonSettings]]) -> list[str]:
    """Every way `text` disagrees with `classes`; empty when the guide follows them."""
    out: list[str] = []
    owner = {var: cls.__name__ for cls in classes for var in own_variables(cls)}
    found = sections(text)
    named = [m.group(1) for heading, _ in found if (m := _CLASS_IN_HEADING.search(heading))]
    expected = [cls.__name__ for cls in classes]
    if named != expected:
        out.append(f"sections name {named}, the classes are {expected} (one section each, in this order)")
    documented_outside: set[str] = set()
    for heading, body in found:
        if heading == OUTSIDE:
            documented_outside = set(table_variables(body))
            continue
        match = _CLASS_IN_HEADING.search(heading)
        if match is None:
            out.append(f"section {heading!r} names no settings class")
            continue
        cls_name = match.group(1)
        listed = table_variables(body)
        want = {var for var, name in owner.items() if name == cls_name}
        for var in sorted(want - set(listed)):
            out.append(f"{var} ({cls_name}) is missing from the {cls_name} section")
        for var in listed:
            if var in owner and owner[var] != cls_name:
                out.append(f"{var} sits in the {cls_name} section but is a field of {owner[var]}")
            elif var not in owner:
                out.append(f"{var} in the {cls_name} section is no setting")
        for var in {v for v in listed if listed.count(v) > 1}:
            out.append(f"{var} is listed more than once in the {cls_name} section")
    if documented_outside != NON_SETTINGS:
        out.append(f"{OUTSIDE!r} documents {sorted(documented_outside)}, expected {sorted(NON_SETTINGS)}")
    for var in sorted(documented_outside & set(owner)):
        out.append(f"{var} is a setting, documented as outside the settings")
    for var in sorted(set(_VARIABLE.findall(text)) - set(owner) - NON_SETTINGS):
        out.append(f"the guide names {var}, which is no setting")
    return out


def test_the_guide_follows_the_settings_classes() -> None:
    assert problems(GUIDE.read_text(encoding="utf-8"), settings_classes()) == []


def test_the_classes_cover_every_setting() -> None:
    classes = settings_classes()
    assert len(classes) == 9
    assert set().union(*(own_variables(cls) for cls in classes)) == {
        f"INFAAS_{name.upper()}" for name in Settings.model_fields
    }


# The checks themselves, on small guides: each disagreement is reported.

_OUTSIDE_TABLE = (
    f"## {OUTSIDE}\n\n| variable | read by | meaning |\n|---|---|---|\n"
    "| `INFAAS_URL`, `INFAAS_KEY` | CLI | x |\n"
    "| `INFAAS_TEST_DATABASE_URL`, `INFAAS_TEST_REDIS_URL` | tests | x |\n"
    "| `INFAAS_REDIS_PASSWORD`, `INFAAS_IMAGE_TARGET` | compose | x |\n"
)


def _guide(rows: dict[str, list[str]], prose: str = "") -> str:
    text = prose
    for cls_name, variables in rows.items():
        text += f"## A section (`{cls_name}`)\n\n| variable | default | meaning |\n|---|---|---|\n"
        text += "".join(f"| `{var}` | 1 | x |\n" for var in variables)
    return text + _OUTSIDE_TABLE


def _complete() -> dict[str, list[str]]:
    return {cls.__name__: sorted(own_variables(cls)) for cls in settings_classes()}


def test_a_complete_small_guide_passes() -> None:
    assert problems(_guide(_complete()), settings_classes()) == []


def test_a_missing_field_is_reported() -> None:
    rows = _complete()
    rows["SchedulerSettings"].remove("INFAAS_QUERY_TIMEOUT_S")
    assert problems(_guide(rows), settings_classes()) == [
        "INFAAS_QUERY_TIMEOUT_S (SchedulerSettings) is missing from the SchedulerSettings section"
    ]


def test_a_field_in_another_class_section_is_reported() -> None:
    rows = _complete()
    rows["RegistrySettings"].remove("INFAAS_MAX_MODEL_BYTES")
    rows["GatewaySettings"].append("INFAAS_MAX_MODEL_BYTES")
    assert problems(_guide(rows), settings_classes()) == [
        "INFAAS_MAX_MODEL_BYTES sits in the GatewaySettings section but is a field of RegistrySettings",
        "INFAAS_MAX_MODEL_BYTES (RegistrySettings) is missing from the RegistrySettings section",
    ]


def test_a_variable_that_is_no_setting_is_reported() -> None:
    rows = _complete()
    rows["PlannerSettings"].append("INFAAS_AUTOSCALE_PERIOD_S")
    prose = "Set `INFAAS_GATEWAY_PORTS` to move it.\n\n"
    assert problems(_guide(rows, prose), settings_classes()) == [
        "INFAAS_AUTOSCALE_PERIOD_S in the PlannerSettings section is no setting",
        "the guide names INFAAS_AUTOSCALE_PERIOD_S, which is no setting",
        "the guide names INFAAS_GATEWAY_PORTS, which is no setting",
    ]


def test_sections_out_of_order_or_unnamed_are_reported() -> None:
    rows = _complete()
    swapped = {"SuiteSettings": rows.pop("SuiteSettings"), **rows}
    text = _guide(swapped).replace("## A section (`JobsSettings`)", "## Offline jobs")
    found = problems(text, settings_classes())
    assert len(found) == 2
    assert found[0].startswith("sections name ['SuiteSettings', 'CommonSettings',")
    assert found[1] == "section 'Offline jobs' names no settings class"
