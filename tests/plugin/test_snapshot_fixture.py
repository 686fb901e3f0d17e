"""``callqa_snapshot``: a test fails when what the judge says changes, until
``--snapshot-update`` accepts it — without xdist and under ``-n 2``."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_callqa.testing.fake_replies import (
    default_judge_reply,
    first_user_json,
    judge_items,
    mid_score,
)

from ..judge.helpers import tree_text
from .conftest import PYPROJECT, SECRET, LLMProject, MiniProject

SNAPSHOT_TEST = """
def test_verdict(callqa_result, callqa_snapshot):
    assert callqa_result.judge_record == callqa_snapshot
"""
# No cache: a changed verdict must reach the run. Recorded outputs of alpha (the ini file's
# model: a command line naming models leaves unused snapshots alone), four cases.
ARGS = ("--no-callqa-benchmarks", "--callqa-cache=off")
ALPHA = 'callqa_models = ["alpha"]\n'


@pytest.fixture
def verdicts(llm: LLMProject, pytester: pytest.Pytester) -> dict[str, float]:
    """The judge's score for every 0-1 metric; set ``["score"]`` to change its verdicts."""
    state = {"score": 0.5}

    def score(item: Mapping[str, Any]) -> float:
        scale = str(item.get("scale"))
        return state["score"] if scale == "unit" else mid_score(scale)

    def reply(body: dict[str, Any]) -> str | None:
        items = judge_items(first_user_json(body))
        return default_judge_reply(items, score) if items else None

    llm.serve(reply=reply)
    llm.ini(ALPHA)
    llm.project.write_tests(SNAPSHOT_TEST)
    return state


def snapshot_files(pytester: pytest.Pytester) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8")
            for p in sorted(pytester.path.rglob("__snapshots__/**/*.json"))}


def test_a_changed_verdict_fails_until_accepted(
    verdicts: dict[str, float], pytester: pytest.Pytester
) -> None:
    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=4)
    files = snapshot_files(pytester)
    assert len(files) == 4 and all('"score": 0.5' in text for name, text in files.items()
                                   if "entity" not in name)
    pytester.runpytest(*ARGS).assert_outcomes(passed=4)

    verdicts["score"] = 0.75
    changed = pytester.runpytest(*ARGS)
    # The entity task has no judge-scored metric: its record (empty) does not change.
    changed.assert_outcomes(passed=1, failed=3)
    changed.stdout.fnmatch_lines(["*snapshot*"])

    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=4)
    assert all('"score": 0.75' in text for name, text in snapshot_files(pytester).items()
               if "entity" not in name)
    pytester.runpytest(*ARGS).assert_outcomes(passed=4)
    assert SECRET not in tree_text(pytester.path)


def test_a_changed_verdict_fails_until_accepted_under_xdist(
    verdicts: dict[str, float], pytester: pytest.Pytester
) -> None:
    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=4)
    verdicts["score"] = 0.25
    # Workers are processes either way; the update runs in a fresh controller process too,
    # which must import the extension by its dotted path to write the snapshots.
    pytester.runpytest(*ARGS, "-n", "2").assert_outcomes(passed=1, failed=3)
    updated = pytester.runpytest_subprocess(*ARGS, "-n", "2", "--snapshot-update")
    updated.assert_outcomes(passed=4)
    assert all('"score": 0.25' in text for name, text in snapshot_files(pytester).items()
               if "entity" not in name)
    pytester.runpytest(*ARGS).assert_outcomes(passed=4)


def snapshot_cases(project: MiniProject, files: dict[str, str]) -> None:
    """Copies of the qa-refund case under the ids (and file names) given, alpha's outputs of
    them, and one snapshot test over the qa cases."""
    for case_id, name in files.items():
        case = {**copy.deepcopy(project.cases["qa-refund"]), "id": case_id}
        project.write_case(case, name)
        project.write_output("alpha", case_id, case["expected_outcome"])
    project.write_tests("""
        import pytest

        @pytest.mark.callqa(task="qa")
        def test_snap(callqa_result, callqa_snapshot):
            assert {"case": callqa_result.case_id} == callqa_snapshot
    """)


def test_ids_that_differ_only_in_characters_a_file_name_cannot_hold_are_errors(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # syrupy leaves ':' out of file names: "qa:refund" and "qarefund" shared one snapshot,
    # and each failed against the other's verdict (or passed against its own by turns).
    snapshot_cases(project, {"qa:refund": "qa_refund.json", "qarefund": "qarefund.json"})
    for args in (["--snapshot-update"], ["-n", "2", "--snapshot-update"]):
        result = pytester.runpytest("--callqa-models=alpha", *args)
        result.assert_outcomes(passed=1, errors=2)
        result.stdout.fnmatch_lines([
            "*callqa_snapshot: this test's snapshot file would also be that of "
            "test_eval.py::test_snap[[]alpha-qarefund[]]*"])
    assert sorted(snapshot_files(pytester)) == ["test_snap[alpha-qa-refund].json"]


def test_a_verdict_the_judge_could_not_give_is_an_error_and_the_accepted_one_stays(
    verdicts: dict[str, float], llm: LLMProject, pytester: pytest.Pytester
) -> None:
    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=4)
    accepted = snapshot_files(pytester)
    llm.serve(reply=lambda body: "not a verdict")
    # Before: written as the expected verdict under --snapshot-update (and the next good run
    # failed as a changed verdict), or compared and failed as the model's failure.
    for update in (["--snapshot-update"], []):
        result = pytester.runpytest(*ARGS, *update)
        # entity asks the judge nothing: its (empty) record still matches.
        result.assert_outcomes(passed=1, errors=3)
        result.stdout.fnmatch_lines(["*the judge could not give the verdict(s) of *: not "
                                     "compared with the snapshot, and not written as the "
                                     "expected one*"])
        assert snapshot_files(pytester) == accepted


def test_a_generation_that_fails_during_an_update_keeps_the_accepted_snapshot(
    project: MiniProject, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_tests(SNAPSHOT_TEST)
    pytester.makeconftest("""
        import os

        def pytest_callqa_generate(model, case, config):
            if os.environ.get("CALLQA_TEST_BREAK") == case.id:
                raise RuntimeError("the model's endpoint is down")
    """)
    (project.root / "pyproject.toml").write_text(PYPROJECT + ALPHA, encoding="utf-8")
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=4)
    accepted = snapshot_files(pytester)
    monkeypatch.setenv("CALLQA_TEST_BREAK", "qa-refund")
    # Before: "1 unused snapshot deleted" — the error left the snapshot unused.
    broken = pytester.runpytest("--snapshot-update")
    broken.assert_outcomes(passed=3, errors=1)
    assert "deleted" not in broken.stdout.str()
    assert snapshot_files(pytester) == accepted


def test_shards_keep_each_others_snapshots(
    verdicts: dict[str, float], pytester: pytest.Pytester
) -> None:
    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=4)
    accepted = snapshot_files(pytester)
    # Before: each shard reported the other's snapshots unused (exit 1), and an update of
    # one shard deleted them.
    for shard in ("1/2", "2/2"):
        for update in ([], ["--snapshot-update"]):
            result = pytester.runpytest(*ARGS, f"--callqa-shard={shard}", *update)
            assert result.ret == pytest.ExitCode.OK
            assert "unused" not in result.stdout.str()
            assert snapshot_files(pytester) == accepted


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_shards_find_an_obsolete_snapshot_as_a_whole_run_does(
    verdicts: dict[str, float], pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
    workers: list[str],
) -> None:
    # As an outer xdist worker, syrupy would leave unused snapshots to its controller.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=4)
    accepted = snapshot_files(pytester)
    for shard in ("1/2", "2/2"):
        result = pytester.runpytest(*ARGS, f"--callqa-shard={shard}", *workers)
        assert result.ret == pytest.ExitCode.OK
        assert "unused" not in result.stdout.str()
    # Before: the snapshot of a case removed from the suite failed an unsharded run and
    # passed every shard, which took the run for a partial one.
    next(pytester.path.joinpath("cases").rglob("qa-refund.json")).unlink()
    for shard in ("1/2", "2/2"):
        result = pytester.runpytest(*ARGS, f"--callqa-shard={shard}", *workers)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["*1 snapshot unused*"])
    assert snapshot_files(pytester) == accepted
    pytester.runpytest(*ARGS, "--callqa-shard=2/2", "--snapshot-update", *workers)
    left = snapshot_files(pytester)
    assert len(left) == 3 and set(left) < set(accepted)


def test_long_ids_alike_up_to_where_a_file_name_ends_are_errors(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # syrupy cuts a file name to 255 characters: two ids alike in their first 250 shared a
    # file, each failing against the other's verdict.
    stem = "qa-" + "x" * 235
    snapshot_cases(project, {stem + "-a": "a.json", stem + "-b": "b.json"})
    result = pytester.runpytest("--callqa-models=alpha", "--snapshot-update")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*callqa_snapshot: this test's snapshot file would also be "
                                 "that of *"])


def test_long_ids_alike_up_to_where_a_file_name_ends_in_a_class_are_errors(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # In a class the file is named "TestSnap.test_snap[id]": ids 8 characters short of
    # the cut without the class's part were taken apart, and both tests wrote one file
    # (the update passed; the next run failed one against the other's verdict).
    stem = "qa-" + "x" * 226
    snapshot_cases(project, {stem + "-a": "a.json", stem + "-b": "b.json"})
    project.write_tests("""
        import pytest

        @pytest.mark.callqa(task="qa")
        class TestSnap:
            def test_snap(self, callqa_result, callqa_snapshot):
                assert {"case": callqa_result.case_id} == callqa_snapshot
    """)
    result = pytester.runpytest("--callqa-models=alpha", "--snapshot-update")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*callqa_snapshot: this test's snapshot file would also be "
                                 "that of test_eval.py::TestSnap::test_snap*"])


def test_a_snapshot_in_a_test_over_repeated_runs_is_an_error_naming_the_fix(
        verdicts: dict[str, float], pytester: pytest.Pytester) -> None:
    # Before: runs 2..N were checked against snapshots one run never wrote: "FAILED (flaky
    # 1/3)", counted against the model as a flaky case.
    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=4)
    repeated = pytester.runpytest(*ARGS, "--callqa-runs", "3")
    repeated.assert_outcomes(errors=4)
    repeated.stdout.fnmatch_lines(["*callqa_snapshot: this test runs 3 times*"
                                   "@pytest.mark.callqa(runs=1)*"])
    assert "flaky" not in repeated.stdout.str()
    # A test pinned to one run keeps its snapshot whatever --callqa-runs says.
    pytester.makepyfile(test_eval="import pytest\n\n@pytest.mark.callqa(runs=1)\n"
                        + SNAPSHOT_TEST.lstrip())
    pytester.runpytest(*ARGS, "--callqa-runs", "3").assert_outcomes(passed=4)


BOTH = 'callqa_models = ["alpha", "beta"]\n'


@pytest.mark.parametrize(("ini", "narrowed"), [
    ("", ["--callqa-models=alpha"]), ("", ["--callqa-cases=cases/qa"]),
    # -o overrides narrow as the options do: getini answered with them, so the suite they
    # narrowed was taken for the ini file's own, and the others' snapshots were deleted.
    ("", ["-o", "callqa_models=alpha"]), (BOTH, ["-o", "callqa_models=alpha"]),
    ("", ["-o", "callqa_cases=cases/qa"]),
    # Another outputs directory holding fewer of the models found in the ini file's.
    ("", ["--callqa-outputs=outputs2"]), ("", ["-o", "callqa_outputs=outputs2"]),
], ids=["models", "cases", "o-models", "o-named-models", "o-cases", "outputs", "o-outputs"])
def test_a_run_narrowed_to_some_models_or_cases_keeps_the_others_snapshots(
    llm: LLMProject, pytester: pytest.Pytester, ini: str, narrowed: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As an outer xdist worker, syrupy would leave unused snapshots to its controller.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    # Before: the other models' (cases') tests were never made, syrupy took their accepted
    # verdicts for unused ones, --snapshot-update deleted them and a plain run exited 1.
    llm.ini(ini)
    llm.project.write_tests(SNAPSHOT_TEST)
    shutil.copytree(llm.root / "outputs" / "alpha", llm.root / "outputs2" / "alpha")
    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=8)
    accepted = snapshot_files(pytester)
    assert len(accepted) == 8
    for update in (["--snapshot-update"], []):
        result = pytester.runpytest(*ARGS, *narrowed, *update)
        assert result.ret == pytest.ExitCode.OK
        assert "deleted" not in result.stdout.str()
        assert "narrower than the ini file's" in result.stdout.str()
        assert snapshot_files(pytester) == accepted


@pytest.mark.parametrize("again", [
    [], ["--callqa-cases=cases"], ["--callqa-models=alpha"],
    # An override giving the ini file's own value: getini answers with the override, so
    # every -o was taken for a narrowing, and the obsolete snapshot was kept.
    ["-o", "callqa_cases=cases"], ["-o", "callqa_models=alpha"],
    ["-o", "callqa_outputs=outputs"]])
def test_the_suite_given_again_on_the_command_line_still_finds_obsolete_snapshots(
    verdicts: dict[str, float], pytester: pytest.Pytester, again: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # syrupy reads this variable to tell an xdist worker, which leaves unused snapshots to
    # its controller: when this suite runs under xdist, the inner run would report none.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    # The ini file's own cases folder, or its own models, narrow nothing: a snapshot of a
    # case removed from the suite is reported unused and deleted by --snapshot-update (a
    # first version of the narrowed-run rule left it alone whenever the option was given).
    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=4)
    next(pytester.path.joinpath("cases").rglob("qa-refund.json")).unlink()
    plain = pytester.runpytest(*ARGS, *again)
    assert plain.ret == pytest.ExitCode.TESTS_FAILED
    plain.stdout.fnmatch_lines(["*1 snapshot unused*"])
    assert "narrower than the ini file's" not in plain.stdout.str()
    pytester.runpytest(*ARGS, *again, "--snapshot-update").assert_outcomes(passed=3)
    assert len(snapshot_files(pytester)) == 3


def test_an_unusable_ini_model_the_command_line_replaces_does_not_break_the_snapshots(
    verdicts: dict[str, float], llm: LLMProject, pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    # The ini file's second entry is a mistyped live model the command line leaves out:
    # reading it to tell whether the run was narrowed raised in every snapshot test.
    llm.ini('callqa_models = ["alpha", "live=gpt@htps://u:pw@127.0.0.1:9/v1"]\n')
    result = pytester.runpytest(*ARGS, "--callqa-models=alpha", "--snapshot-update")
    result.assert_outcomes(passed=4)
    assert len(snapshot_files(pytester)) == 4
    assert "pw@" not in result.stdout.str()
