"""A real JSON report of the example project, written once per session, and helpers that
edit copies of it the way a changed model or case set would."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"


@pytest.fixture(scope="session")
def example_report_data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The report of one offline run of the example project; the release-gate tests alone
    score every case of every model, which keeps this to a few seconds."""
    path = tmp_path_factory.mktemp("report") / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "eval", "-q", "-p", "no:cacheprovider",
         "tests/test_release_gate.py", f"--callqa-report={path}"],
        cwd=EXAMPLE, capture_output=True, text=True, timeout=300, check=False)
    assert path.exists(), f"no report written:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def report(example_report_data: dict[str, Any]) -> dict[str, Any]:
    """A copy of the example report that a test may edit."""
    return copy.deepcopy(example_report_data)


def case_entries(report: dict[str, Any], model: str, task: str) -> list[dict[str, Any]]:
    return [c for c in report["cases"] if c["model"] == model and c["task"] == task]


def spec_of(report: dict[str, Any], task: str, metric: str) -> dict[str, Any]:
    return next(s for s in report["metric_specs"][task] if s["id"] == metric)


def refresh(report: dict[str, Any], model: str, task: str) -> None:
    """Recompute the model-level figures of (model, task) from its case entries (one run per
    case, as in the example): the mean over cases, pooled counts for pooled rates."""
    entries = case_entries(report, model, task)
    agg = report["models"][model]["tasks"][task]
    scores = [c["score"] if c["valid"] and c["score"] is not None else 0.0 for c in entries
              if not c["judge_errors"]]
    agg["score"] = sum(scores) / len(scores)
    for mid, figure in agg["metrics"].items():
        scored = [c["metrics"][mid] for c in entries
                  if mid in c["metrics"] and c["metrics"][mid]["scored"]]
        if not scored:
            continue
        if all("numerator" in m["details"] for m in scored) and mid in POOLED:
            den = sum(m["details"]["denominator"] for m in scored)
            figure["value"] = sum(m["details"]["numerator"] for m in scored) / den
        else:
            figure["value"] = sum(m["value"] for m in scored) / len(scored)


POOLED = {"compliance_false_pass_rate", "fabrication_free_rate"}


def worsen(report: dict[str, Any], model: str, task: str, factor: float,
           cases: int | None = None) -> None:
    """Scale down the task score and every 0–1 higher-is-better metric of ``model`` on
    ``task`` (all its cases, or the first ``cases``), leaving blockers as they were."""
    for entry in case_entries(report, model, task)[:cases]:
        if entry["score"] is not None:
            entry["score"] *= factor
        for mid, metric in entry["metrics"].items():
            spec = next((s for s in report["metric_specs"][task] if s["id"] == mid), None)
            if (spec is None or spec["scale"] != "0-1" or metric["value"] is None
                    or not (spec["bands"] or {}).get("higher_is_better", True)):
                continue
            metric["value"] *= factor
    refresh(report, model, task)
