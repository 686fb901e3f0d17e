"""Live generation through the built-in OpenAI-compatible generator."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.evaluate import evaluate, evaluate_many
from pytest_callqa.engine.generate import OpenAIGenerator, default_messages, output_structure
from pytest_callqa.engine.judges.prompts import numbered_transcript
from pytest_callqa.engine.llm.cache import JudgeCache
from pytest_callqa.engine.llm.endpoint import CallError, ModelSpec

from .conftest import make_runner
from .helpers import SECRET, fixed_reply, qa_case, text_case


@pytest.mark.parametrize(("text", "spec"), [
    ("gpt-4o-mini", ModelSpec("gpt-4o-mini", "gpt-4o-mini", None)),
    ("fast=gpt-4o-mini", ModelSpec("fast", "gpt-4o-mini", None)),
    ("local=llama3:8b@http://127.0.0.1:11434/v1",
     ModelSpec("local", "llama3:8b", "http://127.0.0.1:11434/v1")),
    ("qwen@https://vllm.internal/v1", ModelSpec("qwen", "qwen", "https://vllm.internal/v1")),
    ("vertex=claude@2024-10", ModelSpec("vertex", "claude@2024-10", None)),
    ("claude@2024-10@https://h/v1", ModelSpec("claude@2024-10", "claude@2024-10",
                                              "https://h/v1")),
    ("cand=gpt-4o@http://u:pw@127.0.0.1:8000/v1",
     ModelSpec("cand", "gpt-4o", "http://u:pw@127.0.0.1:8000/v1")),
    # A password's '=' is not where a name ends (the name was 'gpt@https://u:pa').
    ("gpt@https://u:pa=ss@h/v1", ModelSpec("gpt", "gpt", "https://u:pa=ss@h/v1")),
])
def test_model_specs(text: str, spec: ModelSpec) -> None:
    assert ModelSpec.parse(text) == spec


def test_a_model_spec_needs_a_model() -> None:
    with pytest.raises(ValueError, match="names no model"):
        ModelSpec.parse("name=")


@pytest.mark.parametrize(("text", "message"), [
    # 'name=model@$URL' and 'model@$URL' with the variable unset: the entry went to
    # OPENAI_BASE_URL under the model id 'gpt-4o-mini@'.
    ("a=gpt-4o-mini@", "model spec 'a=gpt-4o-mini@' ends in an '@' with no base URL"),
    ("gpt-4o-mini @ ", "model spec 'gpt-4o-mini @' ends in an '@' with no base URL"),
    # '=model@URL' with the name's variable unset went unnamed without a word.
    ("=gpt-4o-mini@http://127.0.0.1:9/v1",
     "model spec '=gpt-4o-mini@<base URL>' has no name before its '='"),
    (" = gpt-4o-mini", "model spec '= gpt-4o-mini' has no name before its '='"),
])
def test_a_model_spec_with_an_empty_name_or_url_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ModelSpec.parse(text)


def test_default_prompt_asks_for_the_structure_and_hides_the_truth() -> None:
    case = text_case()
    system, user = (m["content"] for m in default_messages(case))
    assert output_structure("text") in system
    assert '"sentiment": [{' in system and '"call_purpose": string' in system
    assert "config.sentiment_labels" in system
    inputs = json.loads(user)
    assert inputs["task"] == "text"
    assert [t["n"] for t in inputs["transcript"]] == [1, 2]
    assert "expected_outcome" not in user
    assert case.expected_outcome["summary"]["call_purpose"] not in system + user


def test_the_model_and_the_judge_number_the_turns_alike() -> None:
    # The model was told turn n=1 for the first turn while the judge read "turn 0:" there,
    # so a reason citing "turn 3" was checked against another turn.
    case = text_case()
    told = json.loads(default_messages(case)[1]["content"])["transcript"]
    shown = numbered_transcript(case).splitlines()
    assert [f"turn {t['n']}: {t['speaker']}: {t['text']}" for t in told] == shown


def test_the_qa_prompt_gives_an_omitted_scale_from_the_expected_scorecard() -> None:
    # Told the default scale (SCORE out of 1), a model right on every question scored 0.43
    # against a scorecard of PASS_FAIL out of 5 and SCORE out of 10.
    expected = {"questions": [
        {"question_id": "Q1", "score": 5, "max_score": 5, "type": "PASS_FAIL", "reason": "a"},
        {"question_id": "Q2", "score": 7, "max_score": 10, "type": "SCORE", "reason": "b"}]}
    config = {"questions": [{"question_id": "Q1", "text": "Greeted?"},
                            {"question_id": "Q2", "type": "SCORE"},
                            {"question_id": "Q3", "text": "not in the scorecard"}],
              "team": "north"}
    case = qa_case(0).model_copy(update={"config": config, "expected_outcome": expected})
    shown = json.loads(default_messages(case)[1]["content"])["config"]
    assert shown == {"questions": [
        {"question_id": "Q1", "text": "Greeted?", "type": "PASS_FAIL", "max_score": 5},
        {"question_id": "Q2", "type": "SCORE", "max_score": 10},
        {"question_id": "Q3", "text": "not in the scorecard"}], "team": "north"}
    assert '"score"' not in default_messages(case)[1]["content"]
    assert case.config["questions"][0] == {"question_id": "Q1", "text": "Greeted?"}


def test_tasks_without_a_default_prompt_say_what_to_do() -> None:
    case = qa_case(0).model_copy(update={"task": "agent"})
    with pytest.raises(ValueError, match="pytest_callqa_generate"):
        default_messages(case)


def test_generated_outputs_are_scored_like_recorded_ones(fake: Any, cache_dir: Path) -> None:
    server = fake()
    generator = OpenAIGenerator(ModelSpec.parse(f"cand=gpt-4o-mini@{server.base_url}"),
                                api_key=SECRET, runner=make_runner(JudgeCache(cache_dir)))
    cases = [qa_case(0), text_case()]
    generations = generator.generate(cases)
    assert [g.model for g in generations] == ["cand", "cand"]
    assert all(g.error is None and g.text for g in generations)
    assert generations[0].usage["cost_usd"] > 0 and generations[0].usage["prompt_tokens"] > 0
    # The two calls go out together: which the server saw first is not fixed.
    assert all(b["response_format"]["type"] == "json_schema" for b in server.bodies)
    by_schema = {b["response_format"]["json_schema"]["name"]: b for b in server.bodies}
    assert sorted(by_schema) == ["callqa_qa_output", "callqa_text_output"]
    body = by_schema["callqa_qa_output"]
    assert body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["questions"]
    results = [evaluate(c, g.text, model=g.model, benchmarks=False)
               for c, g in zip(cases, generations, strict=True)]
    assert all(r.metric("response_structure_compliance").value == 1.0 for r in results)
    # Unchanged re-run: no calls; another run index is another call.
    again = OpenAIGenerator("gpt-4o-mini", server.base_url, SECRET,
                            runner=make_runner(JudgeCache(cache_dir)))
    assert [g.text for g in again.generate(cases)] == [g.text for g in generations]
    assert server.requests == 2
    again.generate(cases[:1], run=1)
    assert server.requests == 3


def test_a_bad_reply_is_scored_not_repaired(fake: Any) -> None:
    server = fake(reply=lambda body: "Sorry, I cannot help with that.")
    generator = OpenAIGenerator("gpt-4o-mini", server.base_url, SECRET, runner=make_runner())
    [generation] = generator.generate([qa_case(0)])
    assert server.requests == 1  # never re-asked: the raw reply is what gets scored
    result = evaluate(qa_case(0), generation.text, benchmarks=False)
    assert result.metric("response_structure_compliance").value == 0.0 and not result.valid


def test_custom_prompts_replace_the_default(fake: Any) -> None:
    server = fake(reply=lambda body: {"questions": []})
    generator = OpenAIGenerator(
        "gpt-4o-mini", server.base_url, SECRET, runner=make_runner(), response_format="none",
        prompts={"qa": lambda case: [{"role": "user", "content": f"score {case.id}"}]},
    )
    generator.generate([qa_case(3)])
    [body] = server.bodies
    assert body["messages"] == [{"role": "user", "content": "score judge-qa-003"}]
    assert "response_format" not in body


def test_failed_generation_is_an_error_not_an_output(fake: Any) -> None:
    server = fake(fault_for=lambda index, body: "500")
    generator = OpenAIGenerator("gpt-4o-mini", server.base_url, SECRET,
                                runner=make_runner(max_retries=1))
    [generation] = generator.generate([qa_case(0)])
    assert generation.text is None
    assert generation.error is not None and "HTTP 500" in generation.error
    assert generation.error.startswith("gpt-4o-mini: ")


def test_a_case_without_a_prompt_fails_its_own_generation_alone(fake: Any) -> None:
    # It raised in the batch's task group: the other cases' requests were cancelled, and
    # every pair of the model errored (under xdist, one worker's share, so -n 2 differed).
    server = fake()
    generator = OpenAIGenerator("gpt-4o-mini", server.base_url, SECRET, runner=make_runner())
    cases = [qa_case(0), qa_case(1).model_copy(update={"task": "grounding"}), qa_case(2)]
    first, grounding, last = generator.generate(cases)
    assert first.error is None and last.error is None and first.text and last.text
    assert grounding.text is None and grounding.error is not None
    assert grounding.error.startswith(
        "gpt-4o-mini: no default generation prompt for task 'grounding'")
    assert server.requests == 2


def test_a_rejected_key_raises_without_the_key(fake: Any) -> None:
    server = fake(fault_for=lambda index, body: "401")
    generator = OpenAIGenerator("gpt-4o-mini", server.base_url, SECRET, runner=make_runner())
    with pytest.raises(CallError) as caught:
        generator.generate([qa_case(0), qa_case(1)])
    assert SECRET not in str(caught.value)


def test_generation_results_feed_a_batch(fake: Any) -> None:
    server = fake()
    generator = OpenAIGenerator("gpt-4o-mini", server.base_url, SECRET, runner=make_runner())
    cases = [qa_case(i) for i in range(5)]
    items = [(c, g.text, g.model) for c, g in zip(cases, generator.generate(cases), strict=True)]
    results = evaluate_many(items, benchmarks=False)
    assert all(r.valid and r.model == "gpt-4o-mini" for r in results)
    assert generator.usage_summary()["calls"] == 5


def test_a_server_that_refuses_the_output_schema_gets_json_object(fake: Any) -> None:
    server = fake(refuses=("json_schema",))
    generator = OpenAIGenerator("gpt-4o-mini", server.base_url, SECRET,
                                runner=make_runner(concurrency=1))
    generations = generator.generate([qa_case(0), qa_case(1)])
    kinds = [body["response_format"]["type"] for body in server.bodies]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert all(g.text is not None and g.error is None for g in generations)
    result = evaluate(qa_case(0), generations[0].text, benchmarks=False)
    assert result.metric("response_structure_compliance").value == 1.0


def test_a_case_too_large_for_the_model_is_not_sent(fake: Any) -> None:
    server = fake()
    case = qa_case(0)
    filler = case.transcript[1].model_copy(update={"text": "x " * 5_000})
    huge = case.model_copy(update={"transcript": [*case.transcript, *[filler] * 300]})
    generator = OpenAIGenerator("gpt-4o-mini", server.base_url, SECRET, runner=make_runner())
    [generation] = generator.generate([huge])
    assert server.requests == 0 and generation.text is None
    assert "input too large" in (generation.error or "")


def test_an_output_cut_at_the_tools_bound_is_an_error_and_not_cached(cache_dir: Path) -> None:
    # A long call's translation can need more than the bound this tool sets; the cut reply
    # was cached and scored as the model's failure (invalid JSON) on every later run.
    cut = json.dumps({"choices": [{"message": {"content": '{"questions": [{"question_id'},
                                   "finish_reason": "length"}]}).encode()
    with fixed_reply(cut) as (base, seen):
        for _ in range(2):
            generator = OpenAIGenerator("gpt-4o-mini", base + "/v1", SECRET,
                                        runner=make_runner(JudgeCache(cache_dir)))
            # The same request twice: the second shares the first's reply, cut short too.
            generations = generator.generate([qa_case(0), qa_case(0)])
            for generation in generations:
                assert generation.text is None
                assert generation.error == (
                    "gpt-4o-mini: the output stopped at the completion bound this tool set "
                    "for the call (finish_reason: length) before it ended, so it is not "
                    "scored")
            assert not generations[0].cached
    assert len(seen) == 2
