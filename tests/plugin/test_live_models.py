"""Live model outputs: ``--callqa-models name=model@base_url`` generates them from an
OpenAI-compatible endpoint (the fake server here), up front and concurrently."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from pytest_callqa.testing import FakeOpenAIServer

from ..judge.helpers import tree_text
from .conftest import PYPROJECT, SECRET, LLMProject
from .test_scorecard import without_call_counts, without_timings

RESULT_TEST = "def test_r(callqa_result):\n    assert callqa_result.case_id\n"
OUTPUT_TEST = "\ndef test_o(callqa_output):\n    assert callqa_output\n"


def heuristic_judge(llm: LLMProject) -> None:
    (llm.root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")


def test_live_models_are_generated_up_front_costed_and_cached(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    heuristic_judge(llm)
    server, url = llm.server, llm.server.base_url
    llm.project.write_tests(RESULT_TEST + "def test_o(callqa_output):\n    assert callqa_output\n")
    args = [f"--callqa-models=alpha,fast=gpt-4o-mini@{url}", "--callqa-report=r.json"]
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=16)
    # One generation per case, however many tests use the pair; none for recorded alpha.
    assert server.requests == server.unique_requests == 4
    assert {body["model"] for body in server.bodies} == {"gpt-4o-mini"}
    assert all("expected_outcome" not in json.dumps(body) for body in server.bodies)
    result.stdout.fnmatch_lines([
        "callqa: generating 4 outputs of 1 live model (concurrency 16, cache rw at "
        ".callqa_cache)...",
        "callqa: generated 4 outputs in * s: 4 requests sent, 0 answered from the cache",
    ])
    card = scorecard_of(result.stdout.str())
    assert f"live models: fast = gpt-4o-mini at {url} (price $0.15/$0.6 per 1M tokens " \
           "(default))" in card
    assert "generation calls: 4, 0 answered from the cache" in card
    lines = card.splitlines()
    spend = next(line for line in lines if line.startswith("generation spend: "))
    assert spend.startswith("generation spend: $0.0") and "for 4 requests (" in spend
    cost_row = next(line for line in lines if line.startswith("Cost per 1000 calls"))
    alpha_cost, fast_cost = (cell.strip() for cell in cost_row.split("|")[1:3])
    assert alpha_cost == "—" and fast_cost.startswith("$")
    report = llm.project.report("r.json")
    assert report["models"]["fast"]["cost_per_1000_calls"] > 0
    fast = [c for c in report["cases"] if c["model"] == "fast"]
    assert len(fast) == 4 and all(c["usage"]["cost_usd"] > 0 for c in fast)
    generation = report["run"]["generation_usage"]
    assert generation["requests"] == 4 and generation["models"]["fast"]["model"] == "gpt-4o-mini"
    assert report["run"]["judge_usage"] is None  # the heuristic judge makes no calls

    warm = pytester.runpytest(*args)
    warm.assert_outcomes(passed=16)
    assert server.requests == 4
    assert "generation calls: 4, 4 answered from the cache" in scorecard_of(warm.stdout.str())


def test_a_live_models_url_with_credentials_is_generated_from_and_never_shown(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    # The spec splits at the first '@' before a URL: the credentials' '@' stays in the URL.
    heuristic_judge(llm)
    llm.project.write_tests(RESULT_TEST)
    url = llm.server.base_url
    with_credentials = url.replace("http://", f"http://user:{SECRET}@")
    result = pytester.runpytest(f"--callqa-models=fast=gpt-4o-mini@{with_credentials}",
                                "--callqa-report=r.json")
    result.assert_outcomes(passed=4)
    assert llm.server.requests == 4
    assert f"live models: fast = gpt-4o-mini at {url} (" in scorecard_of(result.stdout.str())
    assert {c["model"] for c in llm.project.report("r.json")["cases"]} == {"fast"}
    assert SECRET not in result.stdout.str() + result.stderr.str()
    assert SECRET not in tree_text(llm.root)


@pytest.mark.parametrize("entry", [
    "fast=gpt-4o-mini@http:/user:{secret}@{host}",
    "fast=gpt-4o-mini@htps://user:{secret}@{host}",
    "fast=gpt-4o-mini@http//user:{secret}@{host}",
    "gpt-4o-mini@HTPS://user:{secret}@{host}",
    "gpt-4o-mini@user:{secret}@{host}",
])
def test_a_mistyped_url_with_credentials_is_a_usage_error_that_does_not_repeat_them(
    llm: LLMProject, pytester: pytest.Pytester, entry: str
) -> None:
    # Before, an '@' not followed by http:// or https:// joined the model id: the run passed
    # with the credentials in the scorecard, the report, the cache and the requests' model.
    heuristic_judge(llm)
    llm.project.write_tests(RESULT_TEST)
    host = llm.server.base_url.removeprefix("http://")
    result = pytester.runpytest(
        "--callqa-models=" + entry.format(secret=SECRET, host=host), "--callqa-report=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the base URL of model 'gpt-4o-mini' is not usable: it is "
                                 "not an http:// or https:// URL*"])
    assert llm.server.requests == 0
    assert SECRET not in result.stdout.str() + result.stderr.str()
    assert SECRET not in tree_text(llm.root)


def test_a_users_generate_hook_wins_over_the_built_in_generator(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    heuristic_judge(llm)
    pytester.makeconftest("""
        from pytest_callqa import ModelOutput

        def pytest_callqa_generate(model, case, config):
            if model == "gpt-4o-mini" and case.task == "qa":
                return ModelOutput(case.expected_outcome, usage={"cost_usd": 0.5})
            return None
    """)
    llm.project.write_tests(RESULT_TEST)
    pytester.runpytest(f"--callqa-models=gpt-4o-mini@{llm.server.base_url}",
                       "--callqa-report=r.json").assert_outcomes(passed=4)
    assert llm.server.requests == 3
    qa = next(c for c in llm.project.report("r.json")["cases"] if c["task"] == "qa")
    assert qa["model"] == "gpt-4o-mini" and qa["usage"] == {"cost_usd": 0.5}
    assert qa["score"] == 1.0


def test_a_budget_stops_generation_and_the_pairs_are_not_evaluated(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    heuristic_judge(llm)
    llm.project.write_tests(RESULT_TEST)
    # Free input, $1000 per million output tokens: a generation reserves its max_tokens at
    # $0.001 each — 754 for the entity case, asked first (its output skeleton plus twice its
    # inputs' estimated tokens, a digit a token), more than 800 for the qa case after it — so
    # $0.80 covers the first worst case and not the second, whatever the first reply cost.
    result = pytester.runpytest(
        f"--callqa-models=fast=pricey@{llm.server.base_url}", "--callqa-prices=pricey: 0 1000",
        "--callqa-budget=0.8", "--callqa-concurrency=1", "-rs", "--callqa-markdown=s.md",
        "--callqa-html=r.html", "--junitxml=j.xml")
    assert llm.server.requests == 1
    assert llm.server.log[0].body["max_tokens"] == 754
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(["*no output of model 'fast' for case '*': the budget of $0.8 "
                                 "was spent before it was generated*"])
    card = scorecard_of(result.stdout.str())
    assert "budget: $0.8 reached ($0." in card
    assert "no output, not evaluated: fast: " in card
    # The pairs the budget stopped are not read as never asked: the final scores that weigh
    # their tasks are unknown, and the note names the budget, not a test error.
    assert "E fast: qa: 1 case not evaluated, the budget stopped its generation (" in card
    assert "not ranked, what it would be ranked on being unknown — fast: final score" in card
    assert "test errored" not in card
    # Before: exit 0, a pass, with three of four pairs never evaluated.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["callqa: INCOMPLETE — the budget of $0.8 was spent before "
                                 "the run was evaluated in full (3 outputs not generated): "
                                 "not a pass, nor the model's failure; the run exits 4 unless "
                                 "it failed (raise --callqa-budget, or run again: the cache "
                                 "keeps every reply paid for)"])
    # The pull-request comment, the HTML report and JUnit say why the job exits 4.
    said = ("INCOMPLETE — the budget of $0.8 was spent before the run was evaluated in full "
            "(3 outputs not generated)")
    assert f"⚠️ {said}" in (llm.project.root / "s.md").read_text("utf-8")
    assert f'<p class="partial">{said}' in (llm.project.root / "r.html").read_text("utf-8")
    assert f'<property name="callqa.incomplete" value="{said}' in \
        (llm.project.root / "j.xml").read_text("utf-8")
    # A cache that keeps nothing: a run again would stop at the same place.
    uncached = pytester.runpytest(
        f"--callqa-models=fast=pricey@{llm.server.base_url}", "--callqa-prices=pricey: 0 1000",
        "--callqa-budget=0.8", "--callqa-concurrency=1", "--callqa-cache=off")
    assert uncached.ret == pytest.ExitCode.USAGE_ERROR
    uncached.stdout.fnmatch_lines(["callqa: INCOMPLETE — * unless it failed (raise "
                                   "--callqa-budget)"])


class _OverbillingServer(FakeOpenAIServer):
    """Bills far more completion tokens than the bound the request carried."""

    def _completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        completion = super()._completion(body, fault)
        completion["usage"]["completion_tokens"] = 10_000_000
        return completion


def test_a_server_billing_beyond_the_bound_is_reported_as_passing_the_budget(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    # Before: "generation spend: $40.0… for 4 requests" with no budget line, and
    # budget_exhausted false: every request had reserved its (small) worst case before the
    # first was settled, so none was stopped.
    heuristic_judge(llm)
    llm.project.write_tests(RESULT_TEST)
    with _OverbillingServer(latency=0.2, max_lifetime_s=60.0) as server:
        result = pytester.runpytest(
            f"--callqa-models=fast=gpt-4o-mini@{server.base_url}",
            "--callqa-prices=gpt-4o-mini: 1 1", "--callqa-budget=5", "--callqa-report=r.json")
    usage = llm.project.report("r.json")["run"]["generation_usage"]
    assert usage["spent_usd"] > 5 and usage["budget_exhausted"] is True
    card = scorecard_of(result.stdout.str())
    assert "budget: $5 passed ($" in card
    assert ("spent; the server billed completion tokens beyond the bound this tool sent "
            "with each request); no further requests were sent") in card


def test_live_models_and_the_llm_judge_share_limits_and_cache_under_xdist(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    server = llm.server
    llm.project.write_tests(RESULT_TEST)
    args = [f"--callqa-models=fast=gpt-4o-mini@{server.base_url}", "--callqa-concurrency=3",
            "--no-callqa-benchmarks"]
    cold = pytester.runpytest("-n", "2", *args, "--callqa-report=n2.json")
    cold.assert_outcomes(passed=4)
    generated = [b for b in server.bodies if "Reply with only one JSON object" in
                 b["messages"][0]["content"]]
    assert len(generated) == 4
    assert server.requests == server.unique_requests > 4
    assert server.peak_in_flight <= 3
    warm = pytester.runpytest("-p", "no:xdist", *args, "--callqa-report=none.json")
    warm.assert_outcomes(passed=4)
    assert server.requests == server.unique_requests
    warm.stdout.fnmatch_lines(["callqa: generated 4 outputs in * s: 0 requests sent, 4 answered "
                               "from the cache", "callqa: judging 4 outputs with *"])
    cards = [without_call_counts(scorecard_of(r.stdout.str())) for r in (cold, warm)]
    # Cold and warm differ only in what was spent; the verdicts are the same.
    assert [line for line in cards[0].splitlines() if "spend" not in line] == \
           [line for line in cards[1].splitlines() if "spend" not in line]
    reports = [without_timings(llm.project.report(name)) for name in ("n2.json", "none.json")]
    assert reports[0]["models"].keys() == reports[1]["models"].keys() == {"fast"}
    assert SECRET not in tree_text(pytester.path)


def test_an_unexpected_generation_error_is_redacted_errored_and_listed(
    llm: LLMProject, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An exception of no known kind out of a model's generation becomes every one of its
    # pairs' message and report reason: its text is redacted like a server's reply.
    from pytest_callqa.engine.generate import OpenAIGenerator

    token = base64.b64encode(f"user:{SECRET}".encode()).decode()

    async def broken(self: OpenAIGenerator, cases: object, run: int = 0) -> object:
        raise RuntimeError(f"client bug holding {SECRET} and Basic {token}")

    monkeypatch.setattr(OpenAIGenerator, "agenerate", broken)
    heuristic_judge(llm)
    llm.project.write_tests(RESULT_TEST)
    url = llm.server.base_url.replace("http://", f"http://user:{SECRET}@")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = pytester.runpytest(f"--callqa-models=fast=gpt-4o-mini@{url}",
                                "--callqa-report=r.json", "--no-callqa-preflight")
    result.assert_outcomes(errors=4)
    result.stdout.fnmatch_lines(["*callqa: generating outputs of model 'fast' failed: client "
                                 "bug holding <redacted>*"])
    report = llm.project.report("r.json")
    assert [e["kind"] for e in report["not_evaluated"]] == ["test_error"] * 4
    assert all(e["reason"].startswith("callqa: generating outputs of model 'fast' failed")
               for e in report["not_evaluated"])
    for secret in (SECRET, token):
        assert secret not in result.stdout.str() + result.stderr.str()
        assert secret not in tree_text(llm.root)


@pytest.mark.parametrize("cache", ["off", "ro"])
def test_xdist_workers_ask_once_for_a_reply_with_a_cache_that_keeps_none(
    llm: LLMProject, pytester: pytest.Pytester, cache: str
) -> None:
    # Each worker generates the outputs of the pairs it tests; both test every case's pair
    # here (two tests per pair), so without a place to hand each other the reply (a cache
    # that keeps none) both asked for it: 7 requests for 4 outputs.
    server = llm.server
    llm.project.write_tests(RESULT_TEST + "\n\n" + RESULT_TEST.replace("def test_", "def test_b_"))
    args = [f"--callqa-models=fast=gpt-4o-mini@{server.base_url}", f"--callqa-cache={cache}",
            "--no-callqa-benchmarks", "-n", "2"]
    pytester.runpytest(*args).assert_outcomes(passed=8)
    generated = [b for b in server.bodies if "Reply with only one JSON object" in
                 b["messages"][0]["content"]]
    assert len(generated) == 4
    assert server.requests == server.unique_requests
    # What the workers handed each other lasted as long as the run.
    assert list((llm.root / ".callqa_cache" / "runs").iterdir()) == []
    assert not list((llm.root / ".callqa_cache").glob("??/*.json"))


def test_two_live_models_of_one_served_id_do_not_double_the_spend_line(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    # One model id behind two names (a model on two servers): calls are counted by the
    # served id, so each name showed both's traffic, and the spend line, adding the names
    # up, counted every token twice.
    first = llm.server.base_url
    second = llm.start().base_url
    heuristic_judge(llm)
    llm.project.write_tests(RESULT_TEST)
    result = pytester.runpytest(
        f"--callqa-models=q4=gpt-4o-mini@{first},q8=gpt-4o-mini@{second}",
        "--callqa-report=r.json")
    result.assert_outcomes(passed=8)
    generation = llm.project.report("r.json")["run"]["generation_usage"]
    assert generation["requests"] == 8
    assert generation["models"]["q4"]["counted_with"] == ["q8"]
    assert generation["models"]["q8"]["counted_with"] == ["q4"]
    spend = next(line for line in scorecard_of(result.stdout.str()).splitlines()
                 if line.startswith("generation spend: "))
    assert (f"for 8 requests ({generation['prompt_tokens']:.0f}+"
            f"{generation['completion_tokens']:.0f} tokens)") in spend
    assert generation["prompt_tokens"] == generation["models"]["q4"]["prompt_tokens"]
