"""What a report records of the configuration that made it — the configured models, the
repeat and judge-repeat settings, the tolerances, the selection of tests — and what the merge
of shards does with it: shards that differ are refused, the judge's repeat agreement is
pooled, and the merged gate is the one a single run would have given."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.run.gate import compare_reports
from pytest_callqa.run.merge import merge_reports

from .conftest import (
    case_entries,
    merge_command,
    shard_report,
    spec_of,
    worsen,
    write_shards,
)

MODEL = "northwind-large"
REPEATED = "evidence_backed_reasoning"


def _put(report: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    target = report
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value


def test_a_report_records_the_settings_and_the_selection_it_was_run_with(
        unsharded: dict[str, Any]) -> None:
    """tests/run/conftest.py runs the example project with ``-m eval
    tests/test_release_gate.py`` and its pyproject.toml's settings."""
    assert unsharded["run"]["settings"] == {
        "models": ["northwind-large", "northwind-mini", "budget-7b"],
        "cases": "cases", "outputs": "outputs", "runs": 1, "pass_rule": "all",
        "judge_repeats": 1, "judge_repeat_tolerance": 0.25, "regression_tolerance": 0.02,
        "prices": {"budget-7b": [0.05, 0.1], "northwind-large": [2.5, 10.0],
                   "northwind-mini": [0.15, 0.6]},
        # Checked by test_a_report_names_its_catalogue_by_its_cases.
        "catalogue": unsharded["run"]["settings"]["catalogue"]}
    assert unsharded["run"]["selection"] == {
        "args": ["tests/test_release_gate.py"], "keyword": "", "markexpr": "eval",
        "deselect": [], "lf": False, "last_failed": False}
    assert all("regression_tolerance" in spec for specs in unsharded["metric_specs"].values()
               for spec in specs)


@pytest.mark.parametrize(("path", "value"), [
    (("run", "settings", "models"), ["northwind-large", "budget-7b"]),
    (("run", "settings", "cases"), "cases/qa"),
    (("run", "settings", "runs"), 3),
    (("run", "settings", "pass_rule"), "majority"),
    (("run", "settings", "judge_repeats"), 3),
    (("run", "settings", "judge_repeat_tolerance"), 0.5),
    (("run", "settings", "regression_tolerance"), 0.05),
    # Each case's cost is priced by its own shard: merged, a blend no price gives.
    (("run", "settings", "prices", "northwind-large"), [25.0, 100.0]),
    (("run", "selection", "keyword"), "northwind-mini"),
    (("run", "selection", "markexpr"), "eval and not slow"),
    (("run", "selection", "args"), ["tests/test_release_gate.py::test_qa"]),
    (("run", "selection", "deselect"), ["tests/test_release_gate.py::test_qa"]),
    (("run", "selection", "lf"), True),
    (("run", "judge_repeats", "repeats"), 5),
    # A shard report left from an earlier run, before a case was added: the pairs of the
    # new case that fell in its share were missing, and the merge said nothing.
    (("run", "settings", "catalogue"), "31 cases, 0123456789abcdef"),
])
def test_shards_of_other_settings_or_another_selection_are_refused(
        shards: list[dict[str, Any]], path: tuple[str, ...], value: Any) -> None:
    """Each of these merged before, and the scorecard silently lacked pairs (another model
    list, a -k in one job) or mixed results of different settings."""
    _put(shards[1], path, value)
    with pytest.raises(ValueError) as info:
        merge_reports(shards, ["one.json", "two.json"])
    message = str(info.value)
    assert f"{'.'.join(path)} differs" in message
    assert "one.json" in message and "two.json" in message


def test_a_report_names_its_catalogue_by_its_cases(unsharded: dict[str, Any]) -> None:
    count, digest = unsharded["run"]["settings"]["catalogue"].split(" cases, ")
    assert int(count) == len(unsharded["golden_cases"]) and len(digest) == 16


def test_the_merge_command_refuses_shards_of_another_model_list_with_status_2(
        shards: list[dict[str, Any]], tmp_path: Path) -> None:
    shards[1]["run"]["settings"]["models"] = ["northwind-large"]
    paths = write_shards(shards, tmp_path)
    done = merge_command(*paths, "--report", tmp_path / "report.json", cwd=tmp_path)
    assert done.returncode == 2
    assert "run.settings.models differs" in done.stderr and str(paths[1]) in done.stderr
    assert not (tmp_path / "report.json").exists()


def _repeat_record(case_number: int) -> dict[str, Any]:
    """Every third verdict's three asks disagree (0 among two 1s); the others agree."""
    agree = case_number % 3 != 0
    return {"metric": REPEATED, "repeats": [1.0, 1.0, 1.0] if agree else [1.0, 0.0, 1.0],
            "repeat_spread": 0.0 if agree else 1.0, "repeats_disagree": not agree}


def _agreement(numbers: list[int]) -> dict[str, Any]:
    disagree = sum(1 for n in numbers if n % 3 == 0)
    return {REPEATED: {"n": len(numbers), "exact": (len(numbers) - disagree) / len(numbers),
                       "mean_spread": disagree / len(numbers), "disagree": disagree,
                       "failed_asks": 0}}


def test_the_judge_repeat_agreement_is_pooled_over_the_shards(
        unsharded: dict[str, Any]) -> None:
    """It was shard 1's alone: the merged report said how often the judge agreed with
    itself on a part of the verdicts."""
    numbers = {}
    for n, case in enumerate(unsharded["cases"]):
        case["judge_records"] = [*case["judge_records"], _repeat_record(n)]
        numbers[(case["model"], case["case_id"])] = n
    _put(unsharded, ("run", "settings", "judge_repeats"), 3)
    unsharded["run"]["judge_repeats"] = {"repeats": 3, "tolerance": 0.25,
                                         "metrics": _agreement(list(numbers.values()))}
    parts = [shard_report(unsharded, i, 2) for i in (1, 2)]
    for part in parts:
        own = [numbers[(c["model"], c["case_id"])] for c in part["cases"]]
        part["run"]["judge_repeats"] = {"repeats": 3, "tolerance": 0.25,
                                        "metrics": _agreement(own)}
    assert parts[0]["run"]["judge_repeats"] != unsharded["run"]["judge_repeats"]
    merged = merge_reports(parts, ["1.json", "2.json"])
    assert merged["run"]["judge_repeats"] == unsharded["run"]["judge_repeats"]


def _evidence_dropped(report: dict[str, Any]) -> dict[str, Any]:
    """The report of a run whose QA answers of MODEL all have 0.1 less evidence: beyond the
    default tolerance, within a team's 0.5; the task scores are kept."""
    changed = copy.deepcopy(report)
    for entry in case_entries(changed, MODEL, "qa"):
        entry["metrics"][REPEATED]["value"] -= 0.1
    # Its figures derived from the cases as a run derives them (one shard of one).
    return shard_report(changed, 1, 1)


def test_the_merged_gate_uses_the_tolerances_the_shards_recorded(
        unsharded: dict[str, Any], tmp_path: Path) -> None:
    """A policy's tolerance for a metric (recorded with its definition) and the run's
    regression tolerance (``run.settings``) gate the merged report as they gated the
    unsharded run: the merge, given neither, used 0.02 for everything."""
    baseline = tmp_path / "main.json"
    baseline.write_text(json.dumps(unsharded), encoding="utf-8")
    current = _evidence_dropped(unsharded)
    spec_of(current, "qa", REPEATED)["regression_tolerance"] = 0.5
    single = compare_reports(current, unsharded,
                             tolerances={f"qa.{REPEATED}": 0.5})
    assert single["verdict"] == "pass"
    assert compare_reports(current, unsharded, tolerances={})["verdict"] == "pass"
    out = tmp_path / "merged.json"
    paths = write_shards([shard_report(current, i, 2) for i in (1, 2)], tmp_path)
    done = merge_command(*paths, "--report", out, "--baseline", baseline, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    gate = json.loads(out.read_text(encoding="utf-8"))["gate"]
    assert gate["verdict"] == "pass"
    # Given as absolute paths, the files are recorded as a run records them: relative to
    # where the command ran (before: the absolute path, the machine's layout).
    assert gate["baseline"] == baseline.name
    assert gate["checks"] == json.loads(json.dumps(single["checks"]))

    # The run's own regression tolerance, 0.2: a 10 % drop of every QA figure of MODEL
    # passes it, and the merged gate, given no --regression-tolerance, uses it too.
    worse = copy.deepcopy(unsharded)
    worsen(worse, MODEL, "qa", 0.9)
    worse = shard_report(worse, 1, 1)
    _put(worse, ("run", "settings", "regression_tolerance"), 0.2)
    assert compare_reports(worse, unsharded, tolerance=0.2)["verdict"] == "pass"
    assert compare_reports(worse, unsharded)["verdict"] == "fail"
    paths = write_shards([shard_report(worse, i, 2) for i in (1, 2)], tmp_path)
    done = merge_command(*paths, "--report", out, "--baseline", baseline, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    given = merge_command(*paths, "--report", out, "--baseline", baseline,
                          "--regression-tolerance", "0.02", cwd=tmp_path)
    assert given.returncode == 1, given.stdout + given.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-0.1", "x", "2"])
def test_a_regression_tolerance_that_is_not_a_number_is_bad_input(
        shards: list[dict[str, Any]], unsharded: dict[str, Any], tmp_path: Path,
        value: str) -> None:
    # nan and inf ended in a traceback with status 1, which means "the gate failed".
    baseline = tmp_path / "main.json"
    baseline.write_text(json.dumps(unsharded), encoding="utf-8")
    paths = write_shards(shards, tmp_path)
    done = merge_command(*paths, "--report", tmp_path / "r.json", "--baseline", baseline,
                         f"--regression-tolerance={value}", cwd=tmp_path)
    assert done.returncode == 2
    expected = "a drop below 1 on the 0-1 scale" if value == "2" else "a number >= 0"
    assert f"argument --regression-tolerance: {value!r}: expected {expected}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_baseline_with_a_value_of_the_wrong_type_is_bad_input_naming_the_key(
        shards: list[dict[str, Any]], unsharded: dict[str, Any], tmp_path: Path) -> None:
    # A list for a case's score ended the merge in a TypeError's traceback, status 1.
    unsharded["cases"][2]["score"] = [1]
    baseline = tmp_path / "main.json"
    baseline.write_text(json.dumps(unsharded), encoding="utf-8")
    paths = write_shards(shards, tmp_path)
    done = merge_command(*paths, "--report", tmp_path / "r.json", "--baseline", baseline,
                         cwd=tmp_path)
    assert done.returncode == 2
    assert (f"baseline report {baseline}: cases[2]: key 'score' should be a number or null, "
            "not an array") in done.stderr
    assert "Traceback" not in done.stderr


def test_a_cases_directory_outside_the_rootdir_is_recorded_from_it(tmp_path: Path) -> None:
    # Before: "../shared/cases" was recorded as the checkout's absolute path, so a baseline
    # from another checkout (main's CI job) always read as another cases directory: exit 4
    # for a case deleted in the pull request, and shards of two workspaces would not merge.
    from pytest_callqa.run.settings import Settings
    from pytest_callqa.run.summary import run_settings

    root = tmp_path / "checkout" / "project"
    settings = Settings(cases=root / ".." / "shared" / "cases", outputs=root / "outputs")
    recorded = run_settings(settings, root, ["alpha"], None)
    assert (recorded["cases"], recorded["outputs"]) == ("../shared/cases", "outputs")
    assert run_settings(Settings(cases=root, outputs=None), root, [], None)["cases"] == "."
