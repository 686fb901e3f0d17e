"""The merge of shard reports carries what the judge left unknown — final scores, Benchmark
Score, disqualification, rank — exactly as the unsharded run reports it."""

from __future__ import annotations

import json
from typing import Any

from pytest_callqa.run.merge import merge_reports, merged_scorecard_text

from .conftest import shard_report, without_timings


def _unknown(entry: dict[str, Any], metric: str, *, blocker: bool = False,
             score_known: bool = False) -> None:
    """Turn ``metric`` of a case entry into a judge error, as the evaluation does."""
    details = dict(entry["metrics"][metric].get("details") or {})
    if blocker:
        details["blocker_metric"] = True
    entry["metrics"][metric] = {"value": None, "scored": False, "rating": None,
                                "reason": "judge error: connection refused", "blocker": False,
                                "flagged": False, "judge_error": True, "details": details}
    entry["judge_errors"] = sorted({*entry["judge_errors"], metric})
    entry["blocked"] = bool(entry["blockers"])
    if not score_known:
        entry["score"], entry["valid"] = None, True


def test_merged_shards_carry_the_judges_gaps_as_the_unsharded_report(
        unsharded: dict[str, Any]) -> None:
    for entry in unsharded["cases"]:
        if entry["model"] == "northwind-large" and entry["task"] == "qa":
            _unknown(entry, "evidence_backed_reasoning")
        elif (entry["model"] == "northwind-mini" and entry["task"] == "text"
              and not entry["blockers"]):
            _unknown(entry, "fabrication_free_rate", blocker=True, score_known=True)
        elif (entry["model"] == "budget-7b" and "faithfulness" in entry["metrics"]
              and entry["metrics"]["faithfulness"]["scored"]):
            _unknown(entry, "faithfulness", score_known=True)
    # The unsharded run's report of these cases: every derived section rebuilt from them.
    # (Through JSON, as a run writes it: intervals are lists there.)
    full = json.loads(json.dumps(shard_report(unsharded, 1, 1)))
    large, mini, budget = (full["models"][m] for m in
                           ("northwind-large", "northwind-mini", "budget-7b"))
    assert "qa" in large["incomplete_tasks"] and large["final_score_b"] is None
    assert large["cost_adjusted_rank"] is None
    assert mini["any_blocker"] is None and mini["tasks"]["text"]["disqualification_unknown"]
    assert mini["tasks"]["text"]["unknown_blockers"] == ["fabrication_free_rate"]
    # Translation: the example's pair without an output leaves it unknown already.
    assert budget["incomplete_tasks"] == ["translation", "benchmarks"]
    assert budget["benchmarks"]["faithfulness"]["judge_errors"] == 17
    assert any(n.startswith("not ranked") for n in full["notes"])
    parts = [shard_report(full, i, 2) for i in (1, 2)]
    merged = merge_reports(parts, ["shard-1.json", "shard-2.json"])
    assert merged["models"] == full["models"] and merged["notes"] == full["notes"]
    assert without_timings(merged) == without_timings(full)
    text = merged_scorecard_text(merged)
    assert text == merged_scorecard_text(full)
    assert "Unknown !?" in text and "—E" in text
    # Before: the merged header had no judge-errors line, which a run's own header has.
    assert ("judge errors: 0 verdicts the judge could not give (shown as E); 5 outputs left "
            "out of task scores, and the tests that needed them reported as errors, not as "
            "model failures; in all, 27 metric results left unknown"
            ) in merged_scorecard_text(merged, width=400)


def test_the_merged_header_names_the_judges_spend_calls_and_repeat_agreement(
        unsharded: dict[str, Any]) -> None:
    # The merged report had these figures, but its scorecard's header left out the lines a
    # run prints from them.
    judge = {"model": "gpt-x", "spent_usd": 0.0718, "requests": 95, "prompt_tokens": 343572,
             "completion_tokens": 33812, "requests_without_usage": 0,
             "cost_per_1000_calls": 0.855, "flagged_verdicts": 2,
             "per_process": {"processes": 2, "calls": 84, "cache_hits": 3}}
    repeats = {"repeats": 3, "tolerance": 0.25, "metrics": {
        "argument_correctness": {"n": 28, "exact": 0.36, "mean_spread": 0.1, "disagree": 5,
                                 "failed_asks": 1},
        "faithfulness": {"n": 0, "exact": None, "mean_spread": None, "disagree": 0,
                         "failed_asks": 0}}}
    unsharded["run"].update(judge_usage=judge, judge_repeats=repeats)
    lines = merged_scorecard_text(unsharded, width=400).splitlines()
    assert [line for line in lines if line.startswith("judge ")] == [
        "judge spend: $0.0718 for 95 requests (343572+33812 tokens); $0.8550 per 1000 judge "
        "calls",
        "judge calls: 84 over 2 processes, 3 answered from the cache or another worker's reply",
        "judge replies flagged: 2 unusable, scored conservatively (lowest score) and marked ?",
        "judge repeats: 3 per verdict (median; majority on 0/1); repeats all agreeing, per "
        "metric: argument_correctness 0.36 (n=28), faithfulness — (n=0)",
        "judge repeats: 5 verdicts spread over more than 0.25 of the scale (flagged "
        "repeats_disagree)",
        "judge repeats: 1 verdict with an ask that gave no score or one off the scale (left "
        "out of the agreement, which is over the asks that scored on the scale)"]
    # A spend the run could not tell with every reply's usage reported: it lacked a price.
    judge.update(spent_usd=None, cost_per_1000_calls=None)
    assert ("judge spend: unknown (no price for gpt-x) for 95 requests (343572+33812 tokens)"
            in merged_scorecard_text(unsharded, width=400).splitlines())
    judge.update(requests_without_usage=4)
    assert ("judge spend: unknown (no token usage came back for 4 requests: a reply without "
            "it, a timeout or a lost connection) for 95 requests (343572+33812 tokens; "
            "tokens unknown for 4 of 95 requests)"
            in merged_scorecard_text(unsharded, width=400).splitlines())
    # Before: with both reasons true, the merge named only the missing usage (a report kept
    # no word of the price table); a run records whether its judge was priced.
    judge.update(priced=False)
    assert ("judge spend: unknown (no price for gpt-x; no token usage came back for 4 "
            "requests: a reply without it, a timeout or a lost connection) for 95 requests "
            "(343572+33812 tokens; tokens unknown for 4 of 95 requests)"
            in merged_scorecard_text(unsharded, width=400).splitlines())
    judge.update(priced=True, requests_without_usage=0)
    assert ("judge spend: unknown for 95 requests (343572+33812 tokens)"
            in merged_scorecard_text(unsharded, width=400).splitlines())
