"""syrupy snapshots of judge output: stable serialisation, and a changed verdict fails until
``--snapshot-update`` accepts it — the extension alone, as docs/judge.md shows it; the
plugin's ``callqa_snapshot`` fixture, in one process and under ``-n 2``, is checked in
tests/plugin/test_snapshot_fixture.py."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from pytest_callqa.engine.evaluate import prepare
from pytest_callqa.engine.judges.llm import OpenAIJudge  # noqa: F401  (see _engine_imported)
from pytest_callqa.snapshot import MASK, JudgeRecordExtension, stable
from pytest_callqa.testing.fake_replies import default_judge_reply, first_user_json, judge_items

from .helpers import SECRET, qa_case, qa_output, tree_text


def test_floats_are_rounded_and_volatile_fields_masked() -> None:
    record = {"metric": "m", "score": 0.66666, "usage": {"prompt_tokens": 812},
              "details": {"latency_s": 0.2134, "turns": [1, 2], "ratio": -0.00004}}
    assert stable(record) == {"metric": "m", "score": 0.667, "usage": MASK,
                              "details": {"latency_s": MASK, "turns": [1, 2], "ratio": 0.0}}


def test_serialisation_ignores_noise_but_not_verdicts() -> None:
    extension = JudgeRecordExtension()
    base = [{"metric": "m", "score": 0.5, "reason": "fine", "usage": {"calls": 1.0}}]
    noisy = [{"metric": "m", "score": 0.50004, "reason": "fine", "usage": {"calls": 0.5}}]
    changed = [{"metric": "m", "score": 0.75, "reason": "fine", "usage": {"calls": 1.0}}]
    assert extension.serialize(base) == extension.serialize(noisy)
    assert extension.serialize(base) != extension.serialize(changed)


def test_the_api_key_is_never_serialised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    text = str(JudgeRecordExtension().serialize({"reason": f"server said {SECRET}"}))
    assert SECRET not in text and "<redacted>" in text


@pytest.mark.parametrize("placeholder", ["a", "x", "none", "EMPTY", "sk-shrt"])
def test_a_placeholder_key_leaves_a_snapshot_as_it_is(monkeypatch: pytest.MonkeyPatch,
                                                      placeholder: str) -> None:
    # OPENAI_API_KEY=a (a keyless local server's placeholder) was replaced in every word:
    # "open<redacted>i:gpt-4o-mini", and a developer's snapshots failed against CI's.
    record = {"judge": "openai:gpt-4o-mini", "metric": "call_intent_match",
              "reason": "none of the sk-shrt lines is EMPTY"}
    monkeypatch.setenv("OPENAI_API_KEY", placeholder)
    assert stable(record) == record


CONFTEST = textwrap.dedent("""
    import os

    import pytest

    from pytest_callqa.engine.llm.cache import JudgeCache
    from pytest_callqa.engine.judges.llm import OpenAIJudge
    from pytest_callqa.snapshot import JudgeRecordExtension


    @pytest.fixture
    def callqa_snapshot(snapshot):
        return snapshot.use_extension(JudgeRecordExtension)


    @pytest.fixture(scope="session")
    def judge():
        return OpenAIJudge("gpt-4o-mini", base_url=os.environ["CALLQA_TEST_BASE_URL"],
                           api_key=os.environ["CALLQA_TEST_KEY"], timeout=5.0,
                           cache=JudgeCache(None, "off"))
""")

TESTS = textwrap.dedent("""
    import pytest

    from pytest_callqa.engine.core.cases import GoldenCase
    from pytest_callqa.engine.evaluate import evaluate


    def case(i):
        q = {"question_id": "greeting", "score": 1, "max_score": 1, "type": "PASS_FAIL",
             "reason": f"Agent said 'hello {i}' at 00:00."}
        return GoldenCase.model_validate({
            "id": f"snap-{i}", "task": "qa",
            "transcript": f"agent: hello {i}\\ncustomer: hi",
            "config": {"questions": [{"question_id": "greeting"}]},
            "expected_outcome": {"questions": [q]},
        })


    @pytest.mark.parametrize("i", range(4))
    def test_judge_verdict(i, judge, callqa_snapshot):
        c = case(i)
        result = evaluate(c, c.expected_outcome, judge=judge, benchmarks=False)
        assert result.judge_record == callqa_snapshot
""")


@pytest.fixture(scope="module", autouse=True)
def _engine_imported() -> None:
    # pytester drops the modules imported during a test when it ends, and numpy cannot be
    # imported twice in one process: everything the inner tests use is imported first.
    prepare(qa_case(0), qa_output(qa_case(0)))


@pytest.fixture
def verdict_project(pytester: pytest.Pytester, fake: Any,
                    monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """A project whose four tests snapshot what the fake judge says; returns the knob that
    sets the judge's score."""
    state = {"score": 0.5}

    def reply(body: dict[str, Any]) -> str | None:
        items = judge_items(first_user_json(body))
        return default_judge_reply(items, lambda item: state["score"]) if items else None

    server = fake(reply=reply)
    monkeypatch.setenv("CALLQA_TEST_BASE_URL", server.base_url)
    monkeypatch.setenv("CALLQA_TEST_KEY", SECRET)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_verdicts=TESTS)
    return state


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # In this process, so the engine is imported once; xdist workers are still processes.
    # The plugin under construction is left out: this checks the extension alone.
    return pytester.runpytest("-p", "no:callqa", "-p", "no:cacheprovider", *args)


def snapshot_scores(pytester: pytest.Pytester) -> list[str]:
    files = sorted(pytester.path.rglob("__snapshots__/**/*.json"))
    return ["0.75" if '"score": 0.75' in f.read_text() else "0.5" for f in files]


def test_a_changed_verdict_fails_until_accepted(
    pytester: pytest.Pytester, verdict_project: dict[str, float]
) -> None:
    run(pytester, "--snapshot-update").assert_outcomes(passed=4)
    assert snapshot_scores(pytester) == ["0.5"] * 4

    verdict_project["score"] = 0.75
    changed = run(pytester)
    changed.assert_outcomes(failed=4)
    assert "snapshot" in changed.stdout.str().lower()

    run(pytester, "--snapshot-update").assert_outcomes(passed=4)
    assert snapshot_scores(pytester) == ["0.75"] * 4
    run(pytester).assert_outcomes(passed=4)
    assert SECRET not in tree_text(pytester.path)


def test_a_record_with_a_repeat_the_judge_could_not_give_is_a_judge_error() -> None:
    # With --callqa-judge-repeats, a failed ask is a null among the record's repeats and
    # nothing else marks it: before, it was written as the expected verdict (and a later
    # good run failed as a changed one), or compared and failed as the model's failure.
    from pytest_callqa.snapshot import _judge_errors

    good = {"metric": "faithfulness", "score": 0.5, "repeats": [0.5, 0.5, 0.5]}
    failed = {"metric": "faithfulness", "score": 0.5, "repeats": [0.5, None, 0.5]}
    assert _judge_errors([good]) == set()
    assert _judge_errors([good, failed]) == {"faithfulness"}
    assert _judge_errors({"metric": "x", "judge_error": True}) == {"x"}
