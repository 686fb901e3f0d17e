"""The minimal case of every task, as docs/cases.md shows it (so the page cannot drift from
what the loader accepts)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

CASES_DOC = Path(__file__).parents[2] / "docs" / "cases.md"
_YAML_BLOCK = re.compile(r"```yaml\n(?P<body>.*?)```", re.DOTALL)


def doc_cases() -> dict[str, dict[str, Any]]:
    """Each task's minimal example, by task."""
    cases: dict[str, dict[str, Any]] = {}
    for match in _YAML_BLOCK.finditer(CASES_DOC.read_text(encoding="utf-8")):
        case = yaml.safe_load(match.group("body"))
        cases[case["task"]] = case
    return cases
