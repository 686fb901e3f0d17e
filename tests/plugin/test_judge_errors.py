"""Preflight: a judge that cannot be used stops the run before its first test, with one
message naming what to set; with the check off, what the judge could not score ends as test
errors and is counted apart in the scorecard, never as failures of the model."""

from __future__ import annotations

import copy
import json
import socket
from collections.abc import Callable
from typing import Any

import pytest

from pytest_callqa.options import REPORT_OPTION

from .conftest import PYPROJECT, QA_CASE, LLMProject

SUITE = """
import pytest
from pytest_callqa import assert_metric, assert_no_blockers

@pytest.mark.callqa(task="qa")
def test_evidence(callqa_result):
    assert_metric(callqa_result, "evidence_backed_reasoning", min=0.4)

@pytest.mark.callqa(task="entity")
def test_entity_blockers(callqa_result):
    assert_no_blockers(callqa_result)
"""


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def judge_at(llm: LLMProject, base_url: str | None, extra: str = "") -> None:
    """The LLM judge at ``base_url`` (None: OpenAI itself) for model ``alpha``."""
    text = PYPROJECT + 'callqa_judge = "openai"\ncallqa_models = ["alpha"]\n' + extra
    if base_url is not None:
        text += f'callqa_judge_base_url = "{base_url}"\n'
    (llm.root / "pyproject.toml").write_text(text, encoding="utf-8")


def assert_stopped(pytester: pytest.Pytester, *lines: str) -> pytest.RunResult:
    """Run the suite; it must stop before any test with a usage error saying ``lines``."""
    result = pytester.runpytest("--no-callqa-benchmarks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(list(lines))
    return result


def test_an_unreachable_judge_stops_the_run_before_any_test(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    port = closed_port()
    judge_at(llm, f"http://127.0.0.1:{port}/v1")
    llm.project.write_tests(SUITE)
    result = assert_stopped(
        pytester,
        f"*callqa: preflight: the judge endpoint http://127.0.0.1:{port}/v1 (model "
        "'gpt-4o-mini') cannot be reached (URLError: *Connection refused): check "
        "--callqa-judge-base-url (or OPENAI_BASE_URL) and that the server is running",
        "*no test was run; --no-callqa-preflight skips this check*")
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def test_openai_without_a_key_stops_the_run_naming_the_variable(
    llm: LLMProject, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    judge_at(llm, None)
    llm.project.write_tests(SUITE)
    assert_stopped(
        pytester,
        "*callqa: preflight: the judge endpoint https://api.openai.com/v1 (model "
        "'gpt-4o-mini') needs an API key and none is set: export OPENAI_API_KEY*")


def test_an_unusable_judge_base_url_is_a_usage_error_naming_the_option(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    judge_at(llm, "http://127.0.0.1:80a0/v1")
    llm.project.write_tests(SUITE)
    assert_stopped(pytester, "*--callqa-judge-base-url: the URL is not usable: it cannot be "
                             "parsed (Port could not be cast to integer value as '80a0')*")


UNUSABLE_ENV_URL = ("OPENAI_BASE_URL of model 'gpt-4o-mini' is not usable: it cannot be "
                    "parsed (Invalid IPv6 URL)")


@pytest.fixture
def judge_from_a_bad_environment(llm: LLMProject, monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite with the LLM judge at an ``OPENAI_BASE_URL`` that cannot be parsed."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://[::1/v1")
    judge_at(llm, None)
    llm.project.write_tests(SUITE)


@pytest.mark.usefixtures("judge_from_a_bad_environment")
def test_an_unusable_openai_base_url_makes_every_judged_test_an_error_saying_so(
    pytester: pytest.Pytester
) -> None:
    result = pytester.runpytest("--no-callqa-benchmarks")
    # A failure of the tool: errors, never failures of the model under test.
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([f"*callqa: the judge cannot be used: {UNUSABLE_ENV_URL}*"])


@pytest.mark.usefixtures("judge_from_a_bad_environment")
def test_an_unusable_openai_base_url_of_the_judge_stops_a_run_with_live_models(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    # The live model's outputs are generated before anything is judged, so the preflight of
    # every endpoint (the judge's included) comes first.
    result = pytester.runpytest("--no-callqa-benchmarks",
                                f"--callqa-models=live=gpt-4o-mini@{llm.server.base_url}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*callqa: preflight: the judge: {UNUSABLE_ENV_URL}*"])
    assert llm.server.requests == 0


NON_ASCII_KEY = ("OPENAI_API_KEY of model 'gpt-4o-mini' is not usable: it has a character "
                 "outside ASCII, which an HTTP header cannot carry")


def test_a_key_outside_ascii_is_refused_naming_the_variable_in_one_process_and_under_xdist(
    llm: LLMProject, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A key pasted with a typographic quote: before, a UnicodeEncodeError traceback in every
    # test, and an INTERNALERROR (exit 3) under xdist.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET123\u2019")
    judge_at(llm, llm.server.base_url)
    llm.project.write_tests(SUITE)
    result = pytester.runpytest("--no-callqa-benchmarks")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([f"*callqa: the judge cannot be used: {NON_ASCII_KEY}*"])
    # Without syrupy, whose warning that no worker sent it a report the project makes an error.
    workers = pytester.runpytest_subprocess("--no-callqa-benchmarks", "-n", "2", "-p",
                                            "no:syrupy")
    assert workers.ret == pytest.ExitCode.USAGE_ERROR
    workers.stderr.fnmatch_lines([f"*callqa: preflight: the judge: {NON_ASCII_KEY}*"])
    shown = result.stdout.str() + workers.stdout.str() + workers.stderr.str()
    assert "SECRET123" not in shown and "Traceback" not in shown
    assert llm.server.requests == 0


def test_a_model_the_server_does_not_serve_is_named(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    server = llm.serve(models=["llama-3.1-8b", "qwen2.5-7b"])
    judge_at(llm, server.base_url)
    llm.project.write_tests(SUITE)
    assert_stopped(
        pytester,
        "*the server does not serve 'gpt-4o-mini' (it serves: llama-3.1-8b, qwen2.5-7b): "
        "set --callqa-judge-model*")
    assert server.requests == 0 and server.model_listings == 1
    # The same server passes once the judge asks for a model it serves.
    ok = pytester.runpytest("--no-callqa-benchmarks", "--callqa-judge-model=qwen2.5-7b")
    ok.assert_outcomes(passed=2)
    assert server.requests > 0


def test_with_preflight_off_judge_errors_are_test_errors_never_failures(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    port = closed_port()
    judge_at(llm, f"http://127.0.0.1:{port}/v1", 'callqa_timeout = "2"\n')
    llm.project.write_tests(SUITE)
    result = pytester.runpytest("--no-callqa-benchmarks", "--no-callqa-preflight",
                                f"{REPORT_OPTION}=r.json")
    # The QA evidence metric needs the judge: an error. The entity task needs no judge: its
    # verdict stands.
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "judge call failed" in out
    card = scorecard_of(out)
    assert "judge errors: 1 verdict the judge could not give (shown as E); 1 output left " \
           "out of task scores" in card
    report: dict[str, Any] = llm.project.report("r.json")
    assert report["judge_errors"] == {"verdicts": 1, "outputs_without_task_score": 1}


def test_a_transcript_too_large_for_the_judge_errors_its_tests_and_the_run_goes_on(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    huge = copy.deepcopy(QA_CASE)
    huge["id"] = "qa-huge"
    filler = {"speaker": "customer", "text": "I keep explaining the double charge again. " * 20}
    huge["transcript"] = huge["transcript"] + [filler] * 6_000  # about 5 MB
    llm.project.write_case(huge)
    llm.project.write_output("alpha", "qa-huge", huge["expected_outcome"])
    judge_at(llm, llm.server.base_url)
    llm.project.write_tests(SUITE)
    result = pytester.runpytest("--no-callqa-benchmarks", "-k", "evidence")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR*test_evidence*qa-huge*",
        "*input too large: the judge call for case 'qa-huge' (5,* characters of transcript) is "
        "about * prompt tokens (estimated), over the 123,904-token input limit of gpt-4o-mini*",
    ])
    # Nothing over the window went out: every request that did is the small case's.
    assert all("qa-huge" not in json.dumps(body) for body in llm.server.bodies)
    assert llm.server.requests >= 1
