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


def example_copy(root: Path) -> Path:
    for name in ("cases", "outputs"):
        shutil.copytree(EXAMPLE / name, root / name)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(EXAMPLE / name, root / name)
    (root / "tests").mkdir()
    (root / "tests" / "test_scored.py").write_text(SCORED, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return example_copy(tmp_path_factory.mktemp("gated"))


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """A copy of the example project a test may change."""
    return example_copy(tmp_path)


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Only the QA pairs, with TF-IDF embeddings: enough cases for the bootstrap, a few seconds
    # a run.
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "eval", "-k", "qa-", "-p", "no:cacheprovider",
         "-q", "--callqa-embeddings=tfidf", "--no-callqa-benchmarks", *args],
        cwd=root, capture_output=True, text=True, timeout=300)


def merge(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_callqa", "merge", *args], cwd=root,
                          capture_output=True, text=True, timeout=300)


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
        gone = run(project, "--callqa-baseline=going.json", "--callqa-report=gone.json",
                   "--callqa-markdown=gone.md", "--callqa-html=gone.html",
                   "--junitxml=gone.xml")
    finally:
        (project / "tests" / "test_going.py").unlink()
    assert gone.returncode == pytest.ExitCode.USAGE_ERROR, gone.stdout[-3000:]
    problem = f"baseline report {project / 'going.json'} does not exist"
    assert f"callqa: {problem}" in gone.stdout
    # Each file says the gate was not run, and why: the JSON had no gate, the markdown no
    # gate line, the HTML no banner, and JUnit said "no baseline".
    written = json.loads((project / "gone.json").read_text(encoding="utf-8"))
    assert written["gate"] == {"baseline": "going.json", "mode": "fail",
                               "verdict": "not run", "problem": problem}
    assert written["cases"]
    assert f"**⚠️ Gate not run** against `going.json`: {problem}" in (
        project / "gone.md").read_text(encoding="utf-8")
    assert f"Baseline gate not run: {problem}" in (project / "gone.html").read_text(
        encoding="utf-8")
    assert f'name="callqa.verdict" value="gate not run: {problem}"' in (
        project / "gone.xml").read_text(encoding="utf-8")


def test_a_baseline_with_a_value_of_the_wrong_type_is_bad_input_naming_the_key(
        fresh: Path) -> None:
    """A list where a case's score belongs: the run used to score every case and end in a
    TypeError's traceback from pytest_sessionfinish, with no scorecard, no report and
    exit 1."""
    assert run(fresh, "--callqa-report=base.json").returncode == 0
    base = json.loads((fresh / "base.json").read_text(encoding="utf-8"))
    base["cases"][0]["score"] = [1]
    (fresh / "typed.json").write_text(json.dumps(base), encoding="utf-8")
    problem = (f"baseline report {fresh / 'typed.json'}: cases[0]: key 'score' should be a "
               "number or null, not an array")
    typed = run(fresh, "--callqa-baseline=typed.json", "--callqa-report=typed-run.json")
    assert typed.returncode == pytest.ExitCode.USAGE_ERROR, typed.stdout[-3000:]
    assert problem in typed.stderr
    assert "passed" not in typed.stdout  # checked before the first test

    # The same baseline put in place while the tests run: the gate cannot be run, the run
    # says why, still writes its report and exits as on bad input.
    shutil.copy(fresh / "base.json", fresh / "swapped.json")
    (fresh / "tests" / "test_swap.py").write_text(
        "import shutil\n\ndef test_swaps_the_baseline(callqa_result):\n"
        "    shutil.copy('typed.json', 'swapped.json')\n", encoding="utf-8")
    swapped = run(fresh, "--callqa-baseline=swapped.json", "--callqa-report=swapped-run.json")
    assert swapped.returncode == pytest.ExitCode.USAGE_ERROR, swapped.stdout[-3000:]
    assert problem.replace("typed.json", "swapped.json") in swapped.stdout
    assert "Traceback" not in swapped.stdout + swapped.stderr
    written = json.loads((fresh / "swapped-run.json").read_text(encoding="utf-8"))
    assert written["gate"]["verdict"] == "not run" and written["cases"]
    assert written["gate"]["problem"] == problem.replace("typed.json", "swapped.json")


POLICY = "[metrics.evidence_backed_reasoning]\ntolerance = 0.5\n"


def test_a_sharded_run_is_gated_as_the_single_run_with_the_team_s_tolerances(
        fresh: Path) -> None:
    """The team's policy allows evidence_backed_reasoning a drop of 0.5. The single run
    passed its gate; the same run as two shards, merged and gated, failed: the merge gated
    with the default tolerance, which the shards' reports gave it no way to know."""
    assert run(fresh, "--callqa-report=base.json").returncode == 0
    # northwind-large's first QA answer of every case now quotes nothing: its evidence drops
    # by about 0.14, its task score by 0.014.
    for path in (fresh / "outputs" / "northwind-large").glob("qa-*.json"):
        output = json.loads(path.read_text(encoding="utf-8"))
        output["questions"][0]["reason"] = "The agent did this."
        path.write_text(json.dumps(output), encoding="utf-8")
    (fresh / "policy.toml").write_text(POLICY, encoding="utf-8")
    strict = run(fresh, "--callqa-baseline=base.json", "--callqa-report=strict.json")
    assert strict.returncode == 1, strict.stdout[-3000:]
    single = run(fresh, "--callqa-policy=policy.toml", "--callqa-baseline=base.json",
                 "--callqa-report=single.json")
    assert single.returncode == 0, single.stdout[-3000:]
    for index in (1, 2):
        shard = run(fresh, "--callqa-policy=policy.toml", f"--callqa-shard={index}/2",
                    f"--callqa-report=shard-{index}.json")
        assert shard.returncode == 0, shard.stdout[-3000:]
    merged = merge(fresh, "shard-1.json", "shard-2.json", "--report", "merged.json",
                   "--baseline", "base.json")
    assert merged.returncode == single.returncode, merged.stdout[-3000:] + merged.stderr
    expected, got = gate_of(fresh, "single.json"), gate_of(fresh, "merged.json")
    assert got["verdict"] == expected["verdict"] == "pass"
    assert got["checks"] == expected["checks"]


def test_shards_of_another_model_list_selection_or_runs_are_not_merged(fresh: Path) -> None:
    """Each merged with exit 0 before, the merged scorecard silently missing pairs (or mixing
    repeated runs with single ones)."""
    assert run(fresh, "--callqa-shard=1/2", "--callqa-report=shard-1.json").returncode == 0
    for name, args, setting in (
            ("models", ["--callqa-models=northwind-large,northwind-mini"],
             "run.settings.models"),
            ("keyword", ["-k", "qa- and northwind"], "run.selection.keyword"),
            ("runs", ["--callqa-runs=3"], "run.settings.runs")):
        shard = run(fresh, "--callqa-shard=2/2", f"--callqa-report={name}.json", *args)
        assert shard.returncode == 0, shard.stdout[-3000:]
        merged = merge(fresh, "shard-1.json", f"{name}.json", "--report", "merged.json")
        assert merged.returncode == 2, merged.stdout[-3000:]
        assert f"{setting} differs" in merged.stderr
        assert "shard-1.json" in merged.stderr and f"{name}.json" in merged.stderr
        assert not (fresh / "merged.json").exists()


def test_a_gate_the_judge_kept_from_comparing_exits_4_not_0(fresh: Path) -> None:
    """The baseline's judge failed on northwind-large's evidence check of every QA case (its
    task score unknown): the gate said "PASS — no regression" and the run exited 0."""
    assert run(fresh, "--callqa-report=base.json").returncode == 0
    base = json.loads((fresh / "base.json").read_text(encoding="utf-8"))
    for case in base["cases"]:
        if (case["model"], case["task"]) == ("northwind-large", "qa"):
            case["metrics"]["evidence_backed_reasoning"].update(
                value=None, scored=False, rating=None, judge_error=True,
                reason="judge error: judge call failed: HTTP 503")
            case.update(score=None, judge_errors=["evidence_backed_reasoning"])
    qa = base["models"]["northwind-large"]["tasks"]["qa"]
    qa["score"] = qa["metrics"]["evidence_backed_reasoning"]["value"] = None
    (fresh / "judged.json").write_text(json.dumps(base), encoding="utf-8")

    gated = run(fresh, "--callqa-baseline=judged.json", "--callqa-report=gated.json",
                "--junitxml=gated.xml")
    assert gated.returncode == pytest.ExitCode.USAGE_ERROR, gated.stdout[-3000:]
    assert "callqa gate against judged.json: INCOMPLETE" in gated.stdout
    assert "judge errors on 5 cases in the baseline" in gated.stdout
    assert gate_of(fresh, "gated.json")["verdict"] == "incomplete"
    assert 'name="callqa.verdict" value="incomplete"' in (fresh / "gated.xml").read_text(
        encoding="utf-8")

    reported = run(fresh, "--callqa-baseline=judged.json", "--callqa-baseline-mode=report")
    assert reported.returncode == 0, reported.stdout[-3000:]
    assert "INCOMPLETE" in reported.stdout


def test_switching_the_benchmarks_off_does_not_pass_the_gate(fresh: Path) -> None:
    # Before: a run with --no-callqa-benchmarks against a baseline that scored them passed,
    # "no regression" and exit 0, whatever its answers did to faithfulness or exact match.
    first = run(fresh, "--callqa-benchmarks", "--callqa-report=base.json")
    assert first.returncode == 0, first.stdout[-3000:]
    off = run(fresh, "--callqa-baseline=base.json", "--callqa-report=off.json")
    assert off.returncode == 4, off.stdout[-3000:]
    gate = gate_of(fresh, "off.json")
    assert gate["verdict"] == "incomplete"
    assert gate["incomplete"] and {e["reason"] for e in gate["incomplete"]} == {
        "benchmarks off"}
    assert "callqa gate against base.json: INCOMPLETE" in off.stdout
    assert "warning: base.json was run with the Layer 2 benchmarks, this run without them" \
        in off.stdout
