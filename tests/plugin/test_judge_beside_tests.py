"""The up-front judge batch runs beside the tests (run/stream.py): a test waits for its own
pair's verdicts only, the batch sends exactly what it sent before, and a run interrupted or
stopped early (``-x``) cancels the rest of it instead of waiting for it."""

from __future__ import annotations

import pytest

from pytest_callqa.options import CONCURRENCY_OPTION, JUDGE_MODE_OPTION, REPORT_OPTION

from .conftest import LLMProject

# Each test writes how many judge requests the server had received when it ran.
SEEN_BY_EACH_TEST = """
import json
import urllib.request
from pathlib import Path

import pytest


def _requests():
    with urllib.request.urlopen("{url}/_callqa/stats", timeout=5) as reply:
        return json.load(reply)["requests"]


def test_seen(callqa_result, callqa_case, callqa_model):
    with Path("seen.txt").open("a", encoding="utf-8") as seen:
        seen.write(f"{{callqa_model}}/{{callqa_case.id}} {{_requests()}}\\n")
"""

INTERRUPTED_BY_FIRST_TEST = """
import pytest


def test_interrupts(callqa_result):
    raise KeyboardInterrupt
"""

FAILS = """
import pytest


def test_fails(callqa_result):
    assert False, "stop here"
"""


def outputs(llm: LLMProject) -> int:
    """How many recorded outputs the mini project has (at most one judge call each in
    combined mode: outputs that are the same for both models share theirs)."""
    return sum(1 for path in (llm.root / "outputs").glob("*/*-*.json"))


def test_the_first_tests_run_before_the_last_verdicts_are_in(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    server = llm.serve(latency=0.25)
    llm.project.write_tests(SEEN_BY_EACH_TEST.format(url=server.base_url.removesuffix("/v1")))
    total = outputs(llm)
    assert total >= 3
    # One call at a time: the k-th verdict is in after k round trips.
    result = pytester.runpytest(f"{CONCURRENCY_OPTION}=1", f"{REPORT_OPTION}=report.json")
    result.assert_outcomes(passed=total)
    seen = [int(line.split()[1]) for line in
            (llm.root / "seen.txt").read_text(encoding="utf-8").splitlines()]
    sent = server.requests
    assert len(seen) == total and sent > 2
    assert seen[0] < sent, f"the first test ran only after all {sent} calls: {seen}"
    assert seen == sorted(seen)
    # Each call sent once, and the report counts all of them.
    assert sent == server.unique_requests
    assert llm.project.report()["run"]["judge_usage"]["requests"] == sent
    # The batch's closing line comes once the tests are done, not between their results.
    result.stdout.fnmatch_lines([
        f"callqa: judging {total} outputs with gpt-4o-mini *...",
        "test_eval.py *",
        f"callqa: judged {total} outputs in * s: {sent} requests sent, 0 answered from the "
        "cache",
    ])


def test_a_warm_rerun_answers_every_test_from_the_cache(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    server = llm.serve(latency=0.05)
    llm.project.write_tests(SEEN_BY_EACH_TEST.format(url=server.base_url.removesuffix("/v1")))
    total = outputs(llm)
    pytester.runpytest().assert_outcomes(passed=total)
    sent = server.requests
    warm = pytester.runpytest()
    warm.assert_outcomes(passed=total)
    assert server.requests == sent
    warm.stdout.fnmatch_lines([f"callqa: judged {total} outputs in * s: 0 requests sent, "
                               f"{sent} answered from the cache", "", "test_eval.py *"])


def test_an_interrupted_run_cancels_the_batch_instead_of_waiting_for_it(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    server = llm.serve(latency=0.5)
    llm.project.write_tests(INTERRUPTED_BY_FIRST_TEST)
    result = pytester.runpytest_inprocess(f"{CONCURRENCY_OPTION}=1", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    # The first verdict came in, the test interrupted the run while the second call was
    # in flight, and no call was sent after it: a whole batch is more than twice that.
    assert 1 <= server.requests <= 2
    llm.project.write_tests(FAILS)
    pytester.runpytest().assert_outcomes(failed=outputs(llm))
    assert server.requests > 2 * 2


def test_a_run_stopped_at_its_first_failure_does_not_wait_for_the_rest_of_the_batch(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    server = llm.serve(latency=0.3)
    llm.project.write_tests(FAILS)
    total = outputs(llm)
    result = pytester.runpytest("-x", f"{CONCURRENCY_OPTION}=1", f"{REPORT_OPTION}=report.json")
    result.assert_outcomes(failed=1)
    # The call in flight when the first test failed was abandoned and none sent after it;
    # the report counts what was sent.
    stopped = server.requests
    assert 1 <= stopped <= 2
    assert llm.project.report()["run"]["judge_usage"]["requests"] == stopped
    # What was answered is cached: the next run sends only the rest.
    pytester.runpytest().assert_outcomes(failed=total)
    assert server.requests - stopped >= total // 2


def test_per_metric_calls_hand_a_pair_on_only_once_all_of_its_verdicts_are_in(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    server = llm.serve(latency=0.05)
    llm.project.write_tests(SEEN_BY_EACH_TEST.format(url=server.base_url.removesuffix("/v1")))
    total = outputs(llm)
    result = pytester.runpytest(f"{CONCURRENCY_OPTION}=1", f"{JUDGE_MODE_OPTION}=per-metric",
                                f"{REPORT_OPTION}=report.json")
    result.assert_outcomes(passed=total)
    report = llm.project.report()
    qa = [case for case in report["cases"] if case["task"] == "qa"]
    assert qa
    for case in qa:
        judged = {record["metric"] for record in case["judge_records"]}
        assert len(judged) >= 2, case["judge_records"]
        assert all(case["metrics"][name]["scored"] for name in judged
                   if name in case["metrics"]), case
    assert server.requests == server.unique_requests > 2 * total
