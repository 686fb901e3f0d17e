"""The pre-merge gate end to end on the example project: a run against its own baseline
passes, a model made worse fails the run naming what regressed, report mode only reports,
and a baseline that cannot be read is a usage error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"
# Every test passes: the gate is the only thing that can fail these runs.
SCORED = "def test_scored(callqa_result):\n    assert callqa_result.case_id\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gated")
    for name in ("cases", "outputs"):
        shutil.copytree(EXAMPLE / name, root / name)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(EXAMPLE / name, root / name)
    (root / "tests").mkdir()
    (root / "tests" / "test_scored.py").write_text(SCORED, encoding="utf-8")
    return root


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Only the QA pairs, with TF-IDF embeddings: enough cases for the bootstrap, a few seconds
    # a run.
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "eval", "-k", "qa-", "-p", "no:cacheprovider",
         "-q", "--callqa-embeddings=tfidf", "--no-callqa-benchmarks", *args],
        cwd=root, capture_output=True, text=True, timeout=300)


def gate_of(root: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / name).read_text(encoding="utf-8"))
    return dict(data["gate"])


def test_the_gate_on_the_example_project(project: Path) -> None:
    first = run(project, "--callqa-report=base.json")
    assert first.returncode == 0, first.stdout[-3000:]
    same = run(project, "--callqa-baseline=base.json", "--callqa-report=same.json")
    assert same.returncode == 0, same.stdout[-3000:]
    assert gate_of(project, "same.json")["verdict"] == "pass"
    assert not gate_of(project, "same.json")["regressions"]

    # northwind-mini now answers every QA question with 0.
    for path in (project / "outputs" / "northwind-mini").glob("qa-*.json"):
        output = json.loads(path.read_text(encoding="utf-8"))
        for question in output["questions"]:
            question["score"] = 0
        path.write_text(json.dumps(output), encoding="utf-8")
    worse = run(project, "--callqa-baseline=base.json", "--callqa-report=worse.json")
    assert worse.returncode == 1, worse.stdout[-3000:]
    gate = gate_of(project, "worse.json")
    assert gate["verdict"] == "fail" and gate["mode"] == "fail"
    regressed = {(r["model"], r["metric"]) for r in gate["regressions"]}
    assert ("northwind-mini", "question_score_accuracy") in regressed
    assert all(r["model"] == "northwind-mini" for r in gate["regressions"])
    line = next(line for line in worse.stdout.splitlines()
                if "question_score_accuracy" in line and "northwind-mini" in line)
    assert "→" in line and "[" in line  # old → new, and the interval

    reported = run(project, "--callqa-baseline=base.json", "--callqa-baseline-mode=report",
                   "--callqa-report=reported.json")
    assert reported.returncode == 0
    assert gate_of(project, "reported.json")["verdict"] == "fail"

    missing = run(project, "--callqa-baseline=nowhere.json")
    assert missing.returncode == pytest.ExitCode.USAGE_ERROR
    assert "baseline report" in missing.stderr and "nowhere.json" in missing.stderr
    assert "passed" not in missing.stdout  # stopped before any test

    # A report the gate could not read stops the run up front too, naming the missing key:
    # before, every test ran, the run's own report was never written and the run exited 5.
    (project / "partial.json").write_text('{"schema": "callqa-report/1"}', encoding="utf-8")
    partial = run(project, "--callqa-baseline=partial.json")
    assert partial.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"baseline report {project / 'partial.json'}: missing key 'models'" in partial.stderr
    assert "passed" not in partial.stdout

    # The baseline goes while the tests run (a checkout that moves under them): the gate
    # cannot be run, which is said and exits as bad input, and the run's own report is still
    # written (it was not, the run ended at the gate).
    shutil.copy(project / "base.json", project / "going.json")
    (project / "tests" / "test_going.py").write_text(
        "import os\n\ndef test_removes_the_baseline(callqa_result):\n"
        "    if os.path.exists('going.json'):\n        os.remove('going.json')\n",
        encoding="utf-8")
    try:
        gone = run(project, "--callqa-baseline=going.json", "--callqa-report=gone.json")
    finally:
        (project / "tests" / "test_going.py").unlink()
    assert gone.returncode == pytest.ExitCode.USAGE_ERROR, gone.stdout[-3000:]
    assert f"callqa: baseline report {project / 'going.json'} does not exist" in gone.stdout
    written = json.loads((project / "gone.json").read_text(encoding="utf-8"))
    assert "gate" not in written and written["cases"]
