"""The mutation run's configuration keeps up with the tests: a judge test file left out of
mutmut's selection would make every mutant it kills look like a survivor."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Their inner pytest sessions cannot load mutmut's trampolines (see docs/testing.md).
NOT_SELECTABLE = {"tests/judge/test_snapshot.py"}


def _mutmut() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]


def test_every_judge_test_file_but_the_snapshot_ones_is_selected() -> None:
    selected = set(_mutmut()["pytest_add_cli_args_test_selection"])
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests/judge").glob("test_*.py")}
    assert sorted(files - NOT_SELECTABLE - selected) == []
    assert {"tests/engine", "tests/families"} <= selected


def test_every_scoped_module_exists() -> None:
    for path in _mutmut()["source_paths"]:
        assert (ROOT / path).is_file(), path
