"""Verdicts handed on as they come in (``judge_as_ready``, ``judge_batch_as_ready``), the
thread that runs a batch beside the tests (``VerdictStream``) and a batch cancelled from
another thread (``ChatRunner.interrupt``)."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.core.judging import JudgeRequest, JudgeVerdict, StreamingJudge
from pytest_callqa.engine.evaluate import Prepared, judge_batch, judge_batch_as_ready, prepare
from pytest_callqa.engine.judges import llm
from pytest_callqa.engine.judges.repeats import RepeatedJudge
from pytest_callqa.engine.llm.cache import JudgeCache
from pytest_callqa.engine.llm.limits import LocalSlots
from pytest_callqa.engine.llm.transport import _Session
from pytest_callqa.run.stream import VerdictStream

from .conftest import make_judge, make_runner
from .helpers import qa_case, qa_items, qa_output, text_case

Ready = list[tuple[int, list[JudgeVerdict]]]


def prepared_items(count: int) -> list[Prepared]:
    """``count`` QA outputs: one judge request each."""
    cases = [qa_case(i) for i in range(count)]
    return [prepare(case, qa_output(case), model="candidate", benchmarks=False)
            for case in cases]


def text_items(count: int) -> list[Prepared]:
    """``count`` different outputs of the text case: three judge requests each."""
    case = text_case()
    items = []
    for i in range(count):
        output = copy.deepcopy(dict(case.expected_outcome))
        output["summary"]["call_purpose"] += f" (output {i})"
        items.append(prepare(case, output, model="candidate", benchmarks=False))
    return items


class ByKeyJudge:
    """Answers each request key with a score of its own, handing the verdicts on in the
    order given by ``order`` (indexes into the distinct keys), one call per key."""

    name = "by-key"

    def __init__(self, order: Callable[[list[str]], list[str]] | None = None) -> None:
        self.order = order or (lambda keys: keys)
        self.calls = 0

    def _verdict(self, request: JudgeRequest) -> JudgeVerdict:
        return JudgeVerdict(metric=request.metric, score=0.5, reason=request.key[:8],
                            usage={"judge_calls": 1.0})

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        return self.judge_as_ready(requests, None)

    def judge_as_ready(self, requests: Sequence[JudgeRequest],
                       on_verdicts: Callable[[Mapping[str, JudgeVerdict]], None] | None,
                       ) -> list[JudgeVerdict]:
        unique = {r.key: r for r in requests}
        known: dict[str, JudgeVerdict] = {}
        for key in self.order(list(unique)):
            self.calls += 1
            known[key] = self._verdict(unique[key])
            if on_verdicts is not None:
                on_verdicts({key: known[key]})
        seen: set[str] = set()
        answers = []
        for r in requests:
            answers.append(known[r.key] if r.key not in seen
                           else dataclasses.replace(known[r.key], usage={}))
            seen.add(r.key)
        return answers


# --- judge_batch_as_ready -----------------------------------------------------------------


def test_each_output_is_handed_on_once_with_exactly_the_verdicts_the_batch_returns() -> None:
    items = text_items(4)
    # The last output's verdicts come in first.
    judge = ByKeyJudge(order=lambda keys: list(reversed(keys)))
    ready: Ready = []
    returned = judge_batch_as_ready(judge, items, lambda i, v: ready.append((i, v)))
    assert sorted(i for i, _ in ready) == [0, 1, 2, 3]
    assert ready[0][0] == 3
    assert dict(ready) == dict(enumerate(returned))
    assert returned == judge_batch(ByKeyJudge(), items)


def test_an_output_is_handed_on_only_when_its_last_verdict_is_in() -> None:
    items = text_items(2)
    keys = [[r.key for r in p.requests] for p in items]
    assert all(len(k) >= 2 for k in keys)
    arrived: list[str] = []
    ready_after: list[tuple[int, int]] = []

    class Tracked(ByKeyJudge):
        def _verdict(self, request: JudgeRequest) -> JudgeVerdict:
            arrived.append(request.key)
            return super()._verdict(request)

    def on_ready(index: int, verdicts: list[JudgeVerdict]) -> None:
        assert set(keys[index]) <= set(arrived)
        ready_after.append((index, len(arrived)))

    # One verdict of each output first, then the rest of output 0, then the rest of 1.
    judge_batch_as_ready(Tracked(order=lambda _keys: [keys[0][0], keys[1][0], *keys[0][1:],
                                                      *keys[1][1:]]), items, on_ready)
    assert ready_after == [(0, len(keys[0]) + 1), (1, len(keys[0]) + len(keys[1]))]


def test_a_judgement_asked_by_two_outputs_is_charged_to_the_first_asker() -> None:
    [one] = text_items(1)
    twin = dataclasses.replace(one, requests=list(one.requests))
    judge = ByKeyJudge()
    ready: Ready = []
    returned = judge_batch_as_ready(judge, [one, twin], lambda i, v: ready.append((i, v)))
    assert judge.calls == len({r.key for r in one.requests})
    by_index = dict(ready)
    assert all(v.usage == {"judge_calls": 1.0} for v in by_index[0])
    assert all(v.usage == {} for v in by_index[1])
    assert by_index == dict(enumerate(returned))


def test_an_output_without_judge_requests_is_handed_on_before_any_call() -> None:
    [asks] = prepared_items(1)
    silent = dataclasses.replace(asks, requests=[])
    order: list[str] = []

    class Recording(ByKeyJudge):
        def judge_as_ready(self, requests: Sequence[JudgeRequest],
                           on_verdicts: Callable[[Mapping[str, JudgeVerdict]], None] | None,
                           ) -> list[JudgeVerdict]:
            order.append("judge")
            return super().judge_as_ready(requests, on_verdicts)

    judge_batch_as_ready(Recording(), [asks, silent],
                         lambda i, v: order.append(f"ready {i} {len(v)}"))
    assert order == ["ready 1 0", "judge", f"ready 0 {len(asks.requests)}"]


def test_a_judge_that_answers_too_few_verdicts_is_an_error() -> None:
    items = prepared_items(2)

    class Short(ByKeyJudge):
        def judge_as_ready(self, requests: Sequence[JudgeRequest],
                           on_verdicts: Callable[[Mapping[str, JudgeVerdict]], None] | None,
                           ) -> list[JudgeVerdict]:
            return super().judge_as_ready(requests, on_verdicts)[:-1]

    with pytest.raises(RuntimeError, match="answered 1 of 2 requests"):
        judge_batch_as_ready(Short(), items, lambda i, v: None)


# --- the judges -----------------------------------------------------------------------------


def test_the_llm_judge_hands_on_cached_and_sent_verdicts_as_each_call_ends(
        fake: Any, cache_dir: Path) -> None:
    server = fake(latency=0.05)
    requests = [r for case, output, model in qa_items(4)
                for r in prepare(case, output, model=model, benchmarks=False).requests]
    cache = JudgeCache(cache_dir, "rw")
    make_judge(server, cache).judge(requests[:2])  # two of four in the cache
    judge = make_judge(server, cache)
    assert isinstance(judge, StreamingJudge)
    handed: list[dict[str, JudgeVerdict]] = []
    answers = judge.judge_as_ready(requests, lambda new: handed.append(dict(new)))
    # One hand-over per call: the two cached first, in order, then the two sent, as each
    # reply comes in.
    assert [list(h) for h in handed[:2]] == [[r.key] for r in requests[:2]]
    assert sorted(key for h in handed[2:] for key in h) == sorted(r.key for r in requests[2:])
    assert len(handed) == 4 and server.requests == 4
    every = {key: v for h in handed for key, v in h.items()}
    assert [every[r.key] for r in requests] == answers


def test_a_reply_is_read_while_the_rest_of_the_batch_is_looked_up_in_the_cache(
        fake: Any, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One call to send ahead of 40 the cache answers, each look-up slow (a shared team cache
    # directory): the reply sat unread behind the whole run of look-ups, past its timeout
    # on a large batch, and the call was sent (and paid for) again.
    server = fake(latency=0.02)
    requests = [r for case, output, model in qa_items(41)
                for r in prepare(case, output, model=model, benchmarks=False).requests]
    cache = JudgeCache(cache_dir, "rw")
    make_judge(server, cache).judge(requests[1:])
    looked_up = llm.cached_structured

    def slow_lookup(*args: Any) -> Any:
        time.sleep(0.01)
        return looked_up(*args)

    monkeypatch.setattr(llm, "cached_structured", slow_lookup)
    handed: list[str] = []
    make_judge(server, cache).judge_as_ready(requests, lambda new: handed.extend(new))
    assert server.requests == 41  # the 40 of the first batch, and the new one once
    assert sorted(handed) == sorted(r.key for r in requests)
    # Its reply (20 ms) is in long before the 40 look-ups (over 400 ms) are done.
    assert handed.index(requests[0].key) < len(handed) - 1


def test_repeats_hand_on_a_combined_verdict_once_all_its_repeats_are_in(fake: Any) -> None:
    server = fake(judge_noise=0.5, seed=3)
    requests = [r for case, output, model in qa_items(3)
                for r in prepare(case, output, model=model, benchmarks=False).requests]
    asked = [*requests, requests[0]]  # the first judgement asked twice
    repeated = RepeatedJudge(make_judge(server), 3, 0.25)
    handed: dict[str, JudgeVerdict] = {}

    def on_verdicts(new: Mapping[str, JudgeVerdict]) -> None:
        assert not set(new) & set(handed), "a request handed on twice"
        handed.update(new)

    answers = repeated.judge_as_ready(asked, on_verdicts)
    assert server.requests == 3 * len(requests)
    assert set(handed) == {r.key for r in requests}
    assert [handed[r.key] for r in requests] == answers[:len(requests)]
    assert answers[-1] == dataclasses.replace(answers[0], usage={})


def test_repeats_over_a_judge_that_cannot_stream_hand_everything_on_at_the_end() -> None:
    requests = [r for p in prepared_items(2) for r in p.requests]

    class Plain:
        name = "plain"

        def judge(self, asked: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
            return [JudgeVerdict(metric=r.metric, score=1.0, reason="plain") for r in asked]

    handed: list[dict[str, JudgeVerdict]] = []
    answers = RepeatedJudge(Plain(), 2, 0.0).judge_as_ready(
        requests, lambda new: handed.append(dict(new)))
    assert len(handed) == 1
    assert handed[0] == {r.key: v for r, v in zip(requests, answers, strict=True)}


# --- VerdictStream --------------------------------------------------------------------------


def verdict(score: float) -> list[JudgeVerdict]:
    return [JudgeVerdict(metric="m", score=score, reason="fixed")]


def test_the_stream_hands_each_key_on_as_the_batch_gets_there() -> None:
    go = [threading.Event() for _ in range(3)]

    def batch(on_ready: Callable[[int, list[JudgeVerdict]], None]) -> None:
        for index in range(3):
            go[index].wait(5)
            on_ready(index, verdict(index))

    stream: VerdictStream[str] = VerdictStream(["a", "b", "c"], batch)
    stream.start()
    go[0].set()
    stream.wait_for("a")
    assert stream.take() == {"a": verdict(0)}
    assert stream.unhanded() == ["b", "c"] and not stream.ended
    go[2].set()
    go[1].set()
    stream.wait_for("c")
    stream.join(5)
    assert stream.ended and stream.failure is None
    assert stream.take() == {"b": verdict(1), "c": verdict(2)}
    assert stream.take() == {}
    assert stream.unhanded() == []


def test_the_stream_keeps_what_the_batch_raised_for_the_main_thread() -> None:
    def batch(on_ready: Callable[[int, list[JudgeVerdict]], None]) -> None:
        on_ready(0, verdict(1))
        raise ValueError("judge broke")

    stream: VerdictStream[str] = VerdictStream(["a", "b"], batch)
    stream.start()
    stream.wait_for("b")  # returns once the batch has ended without it
    stream.join(5)
    assert isinstance(stream.failure, ValueError)
    assert stream.unhanded() == ["b"]
    assert stream.take() == {"a": verdict(1)}


def test_waiting_to_send_ends_at_the_first_call_or_at_the_end_of_the_batch() -> None:
    release = threading.Event()
    holder: list[VerdictStream[str]] = []

    def sends(on_ready: Callable[[int, list[JudgeVerdict]], None]) -> None:
        holder[0].sending()
        release.wait(5)

    stream: VerdictStream[str] = VerdictStream(["a"], sends)
    holder.append(stream)
    stream.start()
    stream.wait_sending()
    assert not stream.ended
    release.set()
    stream.join(5)
    assert stream.ended

    answered: VerdictStream[str] = VerdictStream(["a"], lambda on_ready: on_ready(0, verdict(1)))
    answered.start()
    answered.wait_sending()  # never sends: it ends
    answered.join(5)
    assert answered.ended and answered.take() == {"a": verdict(1)}


# --- ChatRunner.interrupt -------------------------------------------------------------------


def test_an_interrupted_runner_abandons_its_calls_in_flight_and_sends_no_more(
        fake: Any) -> None:
    server = fake(latency=2.0)
    judge = make_judge(server, concurrency=1)
    requests = [r for case, output, model in qa_items(5)
                for r in prepare(case, output, model=model, benchmarks=False).requests]
    failure: list[BaseException] = []

    def run() -> None:
        try:
            judge.judge(requests)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 5
    while server.requests == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.requests == 1
    judge.runner.interrupt()
    worker.join(5)
    assert not worker.is_alive()
    assert failure and isinstance(failure[0], asyncio.CancelledError)
    assert server.requests == 1


def test_a_runner_interrupted_before_its_batch_opens_cancels_it_at_once(fake: Any) -> None:
    server = fake(latency=2.0)
    judge = make_judge(server)
    judge.runner.interrupt()
    requests = [r for p in prepared_items(2) for r in p.requests]
    with pytest.raises(asyncio.CancelledError):
        judge.judge(requests)
    assert server.requests == 0


def test_interrupting_a_batch_whose_loop_has_just_closed_is_harmless() -> None:
    # The batch ended, and asyncio.run closed its loop, between interrupt() reading the
    # session and scheduling the cancellation on it.
    runner = make_runner()
    closed = asyncio.new_event_loop()
    closed.close()
    runner._session = _Session(loop=closed, slots=LocalSlots(1), rate=None,
                               active=asyncio.Semaphore(1), task=None)
    runner.interrupt()
    with pytest.raises(RuntimeError, match="closed"):
        closed.call_soon_threadsafe(lambda: None)
