"""The merge of shards whose jobs deselected different numbers of evaluation tests: with
``--lf`` each job reruns the failures its own cache recorded, after the split into shards,
so the count is each shard's own and the merged report sums it, saying so. What the jobs
were asked for (``-k``, ``-m``, ``--deselect``, node ids, ``--lf``) must still match."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.run.merge import merge_reports

from .conftest import merge_command, write_shards


def _select(shard: dict[str, Any], index: int, deselected: int | None, *,
            last_failed: bool = True) -> None:
    """Shard ``index`` of 2, its run given ``--lf`` (with failures on record when
    ``last_failed``), ``deselected`` evaluation tests deselected (None: none, the key absent,
    as a run writes it)."""
    shard["run"]["shard"] = f"{index}/2"
    selection = shard["run"]["selection"]
    selection["lf"] = True
    selection["last_failed"] = last_failed
    if deselected is not None:
        selection["deselected_eval_tests"] = deselected


@pytest.mark.parametrize(("first", "second", "per_shard"), [
    (3, 4, {"1/2": 3, "2/2": 4}),
    (3, None, {"1/2": 3, "2/2": 0}),
])
def test_shards_that_reran_their_own_failures_merge_with_their_deselections_summed(
        shards: list[dict[str, Any]], first: int, second: int | None,
        per_shard: dict[str, int]) -> None:
    # Before: refused, "run.selection.deselected_eval_tests differs (3 in one.json, 4 in
    # two.json)", though both jobs ran the same command.
    _select(shards[0], 1, first)
    _select(shards[1], 2, second)
    merged = merge_reports(shards, ["one.json", "two.json"])
    selection = merged["run"]["selection"]
    assert selection["deselected_eval_tests"] == sum(per_shard.values())
    assert selection["deselected_eval_tests_per_shard"] == per_shard
    assert selection["last_failed"] is True


def test_a_job_whose_cache_held_no_failures_merges_with_one_that_reran_its_own(
        shards: list[dict[str, Any]]) -> None:
    # Before: refused, "run.selection.last_failed differs": the same --lf found failures on
    # record in one job's cache and none in the other's, which ran its whole shard.
    _select(shards[0], 1, 3)
    _select(shards[1], 2, None, last_failed=False)
    selection = merge_reports(shards, ["one.json", "two.json"])["run"]["selection"]
    assert selection["last_failed"] is True
    assert selection["deselected_eval_tests_per_shard"] == {"1/2": 3, "2/2": 0}


def test_jobs_that_found_no_failures_merge_as_a_whole_run(
        shards: list[dict[str, Any]]) -> None:
    for index, shard in enumerate(shards, start=1):
        _select(shard, index, None, last_failed=False)
    selection = merge_reports(shards, ["one.json", "two.json"])["run"]["selection"]
    assert selection["lf"] is True
    assert selection["last_failed"] is False
    assert "deselected_eval_tests" not in selection


def test_the_merge_command_merges_them_and_says_the_scorecard_is_partial(
        shards: list[dict[str, Any]], tmp_path: Path) -> None:
    _select(shards[0], 1, 3)
    _select(shards[1], 2, 4)
    paths = write_shards(shards, tmp_path)
    done = merge_command(*paths, "--report", tmp_path / "report.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("selection: --lf: the scorecard holds only the results of the selected tests"
            in done.stdout)
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["run"]["selection"]["deselected_eval_tests"] == 7


def test_a_deselection_made_before_the_split_is_counted_once(
        shards: list[dict[str, Any]]) -> None:
    # -k, -m, --deselect and a plugin's own hook deselect before --callqa-shard splits the
    # tests: every shard counts the whole suite's, which one run would count once.
    for index, shard in enumerate(shards, start=1):
        _select(shard, index, 5, last_failed=False)
        shard["run"]["selection"]["keyword"] = "not northwind-mini"
    selection = merge_reports(shards, ["one.json", "two.json"])["run"]["selection"]
    assert selection["deselected_eval_tests"] == 5
    assert "deselected_eval_tests_per_shard" not in selection


def test_a_job_with_a_keyword_of_its_own_is_still_refused_for_its_keyword(
        shards: list[dict[str, Any]]) -> None:
    _select(shards[0], 1, 3)
    _select(shards[1], 2, 9)
    shards[1]["run"]["selection"]["keyword"] = "northwind-mini"
    with pytest.raises(ValueError) as info:
        merge_reports(shards, ["one.json", "two.json"])
    message = str(info.value)
    assert "run.selection.keyword differs" in message
    # The count follows from the keyword: naming it too would point at no setting.
    assert "deselected_eval_tests" not in message


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("deselected_eval_tests", "4", "a whole number"),
    ("last_failed", "yes", "true or false"),
])
def test_a_per_shard_value_of_the_wrong_kind_is_refused(
        shards: list[dict[str, Any]], key: str, value: str, expected: str) -> None:
    _select(shards[0], 1, 3)
    _select(shards[1], 2, None)
    shards[1]["run"]["selection"][key] = value
    with pytest.raises(ValueError, match=rf"two\.json: run\.selection\.{key} is \"{value}\", "
                                         rf"expected {expected}"):
        merge_reports(shards, ["one.json", "two.json"])


def test_reports_without_lf_still_share_whether_lf_was_given(
        shards: list[dict[str, Any]]) -> None:
    # A report older than "lf" said in last_failed only whether --lf was given: one job run
    # with --lf and one without are still refused.
    for index, shard in enumerate(shards, start=1):
        _select(shard, index, None, last_failed=index == 1)
        del shard["run"]["selection"]["lf"]
    with pytest.raises(ValueError, match=r"run\.selection\.last_failed differs"):
        merge_reports(shards, ["one.json", "two.json"])


@pytest.mark.parametrize(("lf", "message"), [
    ("yes", r"one\.json: run\.selection\.lf is \"yes\", expected true or false"),
    (False, r"one\.json: run\.selection\.last_failed is true but run\.selection\.lf is false"),
])
def test_an_lf_that_contradicts_failures_found_is_refused(
        shards: list[dict[str, Any]], lf: Any, message: str) -> None:
    for index, shard in enumerate(shards, start=1):
        _select(shard, index, None)
        shard["run"]["selection"]["lf"] = lf
    with pytest.raises(ValueError, match=message):
        merge_reports(shards, ["one.json", "two.json"])

