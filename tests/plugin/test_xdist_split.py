"""The up-front batch of the LLM judge: under xdist each worker sends the calls of its share
of the cases only (the shares together cover every pair once), and a warm re-run answers
everything from the cache without starting the batch at all."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.run.shard import shard_of

from .conftest import LLMProject

SUITE = """
def test_judged(callqa_result):
    assert callqa_result.valid is not None

def test_output(callqa_output):
    assert callqa_output is not None
"""

# Notes, per process, the pairs whose outputs were asked for before its first test (the
# up-front batch) and then falls back to the recorded outputs.
RECORDING_CONFTEST = """
from pathlib import Path

STARTED = []

def pytest_runtest_setup(item):
    STARTED.append(item.nodeid)

def pytest_callqa_generate(model, case, config):
    if not STARTED:
        worker = getattr(config, "workerinput", {}).get("workerid", "main")
        with open(Path(str(config.rootpath)) / f"up-front-{worker}.txt", "a") as log:
            log.write(f"{model} {case.id}\\n")
    return None
"""

# Records whether the process started an event loop or loaded the openai client.
WATCHING_CONFTEST = """
import asyncio
import sys
from pathlib import Path

_run = asyncio.run

def _watched(*args, **kwargs):
    Path("event-loop-started").touch()
    return _run(*args, **kwargs)

asyncio.run = _watched

def pytest_sessionfinish(session):
    if "openai" in sys.modules:
        Path("openai-loaded").touch()
"""


def up_front(root: Path, worker: str) -> set[tuple[str, str]]:
    log = root / f"up-front-{worker}.txt"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return {(model, case_id) for model, case_id in (line.split() for line in lines)}


def test_under_xdist_each_worker_sends_the_calls_of_its_share_of_the_cases_only(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    project, server = llm.project, llm.server
    pytester.makeconftest(RECORDING_CONFTEST)
    project.write_tests(SUITE)
    result = pytester.runpytest("-n", "2", "--callqa-concurrency=3",
                                "--callqa-judge-mode=per-metric", "--no-callqa-benchmarks")
    result.assert_outcomes(passed=16)
    pairs = {(model, case_id) for model in ("alpha", "beta") for case_id in project.cases}
    shares = {worker: {(m, c) for m, c in pairs if shard_of(c, 2) == number}
              for worker, number in (("gw0", 1), ("gw1", 2))}
    # The mini project's four cases fall in both shares (3 and 1 cases).
    assert len(shares["gw0"]) == 6 and len(shares["gw1"]) == 2
    assert up_front(pytester.path, "gw0") == shares["gw0"]
    assert up_front(pytester.path, "gw1") == shares["gw1"]
    # Each unique request went out once, within the one limit of both workers.
    assert server.requests == server.unique_requests > 0
    assert server.peak_in_flight <= 3


def test_a_single_process_sends_every_pair_up_front(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(RECORDING_CONFTEST)
    llm.project.write_tests(SUITE)
    pytester.runpytest("-p", "no:xdist", "--no-callqa-benchmarks").assert_outcomes(passed=16)
    assert up_front(pytester.path, "main") == {
        (model, case_id) for model in ("alpha", "beta") for case_id in llm.project.cases}


@pytest.mark.parametrize("xdist", [["-p", "no:xdist"], ["-n", "2"]], ids=["one-process", "n2"])
def test_a_warm_rerun_starts_no_event_loop_and_never_loads_openai(
    llm: LLMProject, pytester: pytest.Pytester, xdist: list[str]
) -> None:
    project, server = llm.project, llm.server
    project.write_tests(SUITE)
    args = [*xdist, "--no-callqa-benchmarks", "--callqa-judge-mode=per-metric"]
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=16)
    sent = server.requests
    assert sent > 0
    pytester.makeconftest(WATCHING_CONFTEST)
    # Without xdist the judge is stopped: a run that needs no call does not check the
    # endpoint either (the xdist controller, which collects nothing, still does: it cannot
    # know what its workers will find cached).
    if xdist[0] == "-p":
        server.stop()
    warm = pytester.runpytest_subprocess(*args, "--callqa-report=warm.json")
    warm.assert_outcomes(passed=16)
    assert server.requests == sent
    assert not (pytester.path / "event-loop-started").exists()
    assert not (pytester.path / "openai-loaded").exists()
    usage = project.report("warm.json")["run"]["judge_usage"]
    assert usage["requests"] == 0
    assert usage["per_process"]["calls"] == usage["per_process"]["cache_hits"] > 0


QA_SUITE = """
import pytest

@pytest.mark.callqa(task="qa")
def test_judged(callqa_result):
    assert callqa_result.valid is not None
"""

# Whether numpy was loaded when the run began to end, and whether it was by its very end.
NUMPY_CONFTEST = """
import sys
from pathlib import Path

import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    if "numpy" in sys.modules:
        Path("numpy-before-the-end").touch()

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if "numpy" in sys.modules:
        Path("numpy-at-the-end").touch()
"""


def test_a_warm_rerun_takes_its_intervals_from_the_cache_directory_without_numpy(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    project = llm.project
    # Only QA cases: checking the other families' cases loads numpy (text matching). Two of
    # them, so the scorecard has intervals to draw (one case gives none).
    for path in (project.root / "cases").rglob("*.json"):
        if json.loads(path.read_text(encoding="utf-8"))["task"] != "qa":
            path.unlink()
    project.write_case({**project.cases["qa-refund"], "id": "qa-refund-2"})
    for model in ("alpha", "beta"):
        output = json.loads(
            (project.root / "outputs" / model / "qa-refund.json").read_text(encoding="utf-8"))
        # Scored apart from the first: cases all alike have no interval to draw.
        output["questions"][2]["score"] = 2
        project.write_output(model, "qa-refund-2", output)
    project.write_tests(QA_SUITE)
    pytester.makeconftest(NUMPY_CONFTEST)
    args = ["-p", "no:xdist", "--no-callqa-benchmarks", "--callqa-judge-mode=per-metric"]
    pytester.runpytest_subprocess(*args, "--callqa-report=cold.json").assert_outcomes(
        passed=4)
    # The cold run draws its scorecard's intervals (numpy) and stores them.
    assert (pytester.path / "numpy-at-the-end").exists()
    assert (project.root / ".callqa_cache" / "intervals.json").is_file()
    for mark in ("numpy-before-the-end", "numpy-at-the-end"):
        (pytester.path / mark).unlink(missing_ok=True)
    pytester.runpytest_subprocess(*args, "--callqa-report=warm.json").assert_outcomes(
        passed=4)
    # The QA family with the LLM judge compares no texts, and the intervals are stored.
    assert not (pytester.path / "numpy-at-the-end").exists()
    cold, warm = project.report("cold.json"), project.report("warm.json")
    # The same figures and intervals; only the usage differs (the warm calls were cached).
    for report in (cold, warm):
        for card in report["models"].values():
            card.pop("usage")
    assert warm["models"] == cold["models"]
    assert warm["run"]["embeddings"] == cold["run"]["embeddings"] == {
        "name": "tfidf",
        "description": "tfidf (character 2-4 n-gram TF-IDF; lexical, not semantic)"}


def test_a_cold_run_reports_the_same_results_with_and_without_xdist(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    # Under xdist a worker resolving a pair of the other's share reads the judge's reply
    # from the shared cache: each result said so ("judge_cached_calls"), and which worker's
    # result the report kept depended on the scheduling.
    llm.project.write_tests(SUITE)
    reports = []
    for name, xdist in (("one", ["-p", "no:xdist"]), ("two", ["-n", "2"])):
        result = pytester.runpytest_subprocess(
            *xdist, "--no-callqa-benchmarks", "--callqa-judge-mode=per-metric",
            f"--callqa-cache-dir=cache-{name}", f"--callqa-report={name}.json")
        result.assert_outcomes(passed=16)
        reports.append(llm.project.report(f"{name}.json"))
    one, two = reports
    assert one["cases"] == two["cases"]
    assert one["models"] == two["models"]


def test_merged_shards_charge_identical_judgements_as_a_single_run(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    # beta's text and translation outputs are alpha's: their judgements are the same requests,
    # sent once and charged to one pair in a single run. Split by (model, case) pair, the
    # shards sent some twice: 7 requests merged against the single run's 6, beta charged 3
    # judge calls against 2.
    project = llm.project
    for case_id in ("text-appointment", "translation-fever"):
        project.write_output("beta", case_id, project.cases[case_id]["expected_outcome"])
    project.write_tests(SUITE)
    common = ["-p", "no:xdist", "--no-callqa-benchmarks"]
    # Each run, as each CI job, with a cache of its own.
    pytester.runpytest(*common, "--callqa-cache-dir=c0", "--callqa-report=single.json"
                       ).assert_outcomes(passed=16)
    for index in (1, 2):
        result = pytester.runpytest(*common, f"--callqa-cache-dir=c{index}",
                                    f"--callqa-shard={index}/2",
                                    f"--callqa-report=shard-{index}.json")
        assert result.ret == pytest.ExitCode.OK
    merged = pytester.run(sys.executable, "-m", "pytest_callqa", "merge", "shard-1.json",
                          "shard-2.json", "--report", "merged.json")
    assert merged.ret == 0, merged.stderr.str()
    single, combined = project.report("single.json"), project.report("merged.json")

    def charged(report: dict[str, Any]) -> tuple[Any, ...]:
        return (report["run"]["judge_usage"]["requests"],
                *(report["models"][m]["usage"].get("judge_calls") for m in ("alpha", "beta")))

    assert charged(combined) == charged(single)
    assert llm.server.requests == 2 * single["run"]["judge_usage"]["requests"]
