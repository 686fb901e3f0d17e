"""A real JSON report of the example project, written once per session, and helpers that
edit copies of it the way a changed model or case set would."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.run.merge import scorecard_of
from pytest_callqa.run.repeated import run_notes
from pytest_callqa.run.shard import in_shard
from pytest_callqa.run.summary import models_section

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


@pytest.fixture
def whole(report: dict[str, Any]) -> dict[str, Any]:
    """The example report without its one missing output, whose undecided disqualification
    would hold every gate of it open."""
    report["not_evaluated"] = []
    report["models"] = models_section(scorecard_of(report))
    return report


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


# --- shards of the example report, and the merge command ---------------------------

@pytest.fixture
def unsharded(example_report_data: dict[str, Any]) -> dict[str, Any]:
    """The JSON report of one unsharded, offline run of the example project
    (tests/run/conftest.py runs it once per session), a copy a test may not spoil for the
    others."""
    return copy.deepcopy(example_report_data)


def shard_report(full: dict[str, Any], index: int, count: int) -> dict[str, Any]:
    """The report shard ``index`` of ``count`` would write: the results of its pairs, and
    every section derived from them as a run derives it."""
    report = copy.deepcopy(full)
    report["cases"] = [c for c in report["cases"]
                       if in_shard(c["case_id"], index, count)]
    # A missing output is reported by the tests of its pair; anything else by shard 1,
    # which runs the tests that have no pair. The shard's scorecard knows only its own.
    report["not_evaluated"] = [
        e for e in report["not_evaluated"]
        if (in_shard(e["case_id"], index, count)
            if e["kind"] == "missing_output" else index == 1)]
    card = scorecard_of(report, f"shard {index}")
    ids = {c["case_id"] for c in report["cases"]}
    report["models"] = models_section(card)
    report["model_order"] = [m for m in full["model_order"] if m in card.models]
    report["metric_specs"] = {t: s for t, s in report["metric_specs"].items()
                              if t in card.task_order}
    report["golden_cases"] = {k: v for k, v in report["golden_cases"].items() if k in ids}
    report["notes"] = [*card.notes, *run_notes(card, report["not_evaluated"])]
    report["judge_errors"] = {
        "verdicts": sum(1 for r in card.results for rec in r.judge_records
                        if rec.get("judge_error")),
        "outputs_without_task_score": sum(1 for r in card.results if r.incomplete),
    }
    report["run"]["rank_basis"] = card.rank_basis
    return report


# What differs between two runs of one configuration, whatever the split.
TIMINGS = ("started_at", "duration_s")


def without_timings(report: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(report)
    for key in TIMINGS:
        data["run"].pop(key, None)
    return data


@pytest.fixture
def shards(unsharded: dict[str, Any]) -> list[dict[str, Any]]:
    return [shard_report(unsharded, i, 2) for i in (1, 2)]



def merge_command(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_callqa", "merge", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})


def write_shards(shards: list[dict[str, Any]], where: Path) -> list[Path]:
    paths = []
    for i, shard in enumerate(shards, start=1):
        path = where / f"shard-{i}.json"
        path.write_text(json.dumps(shard), encoding="utf-8")
        paths.append(path)
    return paths


def left_out(report: dict[str, Any], kept: Callable[[dict[str, Any]], bool],
             ) -> set[tuple[str, str, str]]:
    """Take the results ``kept`` refuses out of ``report``, with the model-level figures its
    scorecard then gives, as a run that never evaluated them writes it; returns their keys."""
    gone = {(c["model"], c["task"], c["case_id"]) for c in report["cases"] if not kept(c)}
    report["cases"] = [c for c in report["cases"] if kept(c)]
    report["models"] = models_section(scorecard_of(report))
    return gone
