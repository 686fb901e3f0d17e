"""The fake OpenAI-compatible server itself: faults, counters, bounds, default replies."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from pytest_callqa.testing.fake_openai import FAULTS, FakeOpenAIServer
from pytest_callqa.testing.fake_replies import mid_score

from .helpers import SECRET


def post(server: FakeOpenAIServer, body: dict[str, Any], path: str = "/chat/completions",
         key: str = SECRET) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(
        server.base_url + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:  # closes the connection behind the error response
            return exc.code, dict(exc.headers), json.loads(exc.read())


def chat(text: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


def content(reply: Any) -> str:
    return str(reply["choices"][0]["message"]["content"])


def test_schedule_injects_faults_in_arrival_order(fake: Any) -> None:
    server = fake(schedule=["429", None, "500", "401"], retry_after="7")
    status, headers, _ = post(server, chat("a"))
    assert status == 429 and headers["Retry-After"] == "7"
    assert post(server, chat("a"))[0] == 200
    assert post(server, chat("a"))[0] == 500
    status, _, body = post(server, chat("a"))
    assert status == 401 and SECRET in body["error"]["message"]  # echoes, as the tests need
    assert server.faults_injected == {"429": 1, "500": 1, "401": 1}


def test_seeded_faults_depend_on_the_request_not_the_arrival_order(fake: Any) -> None:
    bodies = [chat(f"question {i}") for i in range(40)]
    first = fake(fault_rate=0.3, seed=5, faults=("500",))
    forward = [post(first, b)[0] for b in bodies]
    second = fake(fault_rate=0.3, seed=5, faults=("500",))
    backward = [post(second, b)[0] for b in reversed(bodies)]
    assert forward == list(reversed(backward))
    assert 3 <= forward.count(500) <= 25


def test_garbage_and_out_of_range_replies(fake: Any) -> None:
    judge_request = chat(json.dumps({"metric": {"metric": "m", "scale": "unit"}}))
    server = fake(schedule=["garbage", "out_of_range", None])
    garbage = content(post(server, judge_request)[2])
    with pytest.raises(json.JSONDecodeError):
        json.loads(garbage)
    assert json.loads(content(post(server, judge_request)[2]))["m"]["score"] == 7.5
    assert json.loads(content(post(server, judge_request)[2]))["m"]["score"] == 0.5


def test_default_judge_reply_answers_every_metric_mid_scale(fake: Any) -> None:
    server = fake()
    metrics = [{"metric": "a", "scale": "unit"}, {"metric": "b", "scale": "likert5"},
               {"metric": "c", "scale": "binary"}, {"metric": "d", "scale": "rubric0_5"}]
    reply = json.loads(content(post(server, chat(json.dumps({"metrics": metrics})))[2]))
    assert [(m, v["score"]) for m, v in reply.items()] == [
        ("a", 0.5), ("b", 3.0), ("c", 1.0), ("d", 3.0)]
    assert mid_score("ternary") == 0.5


def test_json_schema_is_honoured_and_a_refused_format_is_a_400(fake: Any) -> None:
    schema = {"type": "object", "required": ["a", "b"], "additionalProperties": False,
              "properties": {
                  "a": {"type": "object", "properties": {
                      "score": {"type": "integer", "enum": [0, 1, 2, 3, 4, 5]},
                      "reason": {"type": "string"},
                      "failure_code": {"type": ["string", "null"]},
                      "turns": {"type": "array", "items": {"type": "integer"}}}},
                  "b": {"type": "object", "properties": {
                      "score": {"type": "number", "minimum": 0, "maximum": 1}}}}}
    body = {**chat("not a judge request"), "response_format": {
        "type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": schema}}}
    reply = json.loads(content(post(fake(), body)[2]))
    # Every field asked for is filled: a nullable one gets a value, an array one item.
    assert reply == {"a": {"score": 3, "reason": "fake reason",
                           "failure_code": "fake failure_code", "turns": [0]},
                     "b": {"score": 0.5}}
    status, _headers, payload = post(fake(refuses=("json_schema",)), body)
    assert status == 400 and payload["error"]["param"] == "response_format"


def test_counts_requests_unique_bodies_and_usage(fake: Any) -> None:
    server = fake()
    for text in ("a", "b", "a"):
        status, _, reply = post(server, chat(text))
        assert status == 200 and reply["usage"]["prompt_tokens"] >= 1
    assert server.requests == 3 and server.unique_requests == 2
    assert server.stats()["peak_in_flight"] == 1


def test_control_endpoints_are_not_counted(fake: Any) -> None:
    server = fake()
    post(server, chat("a"))
    root = server.base_url.removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/_callqa/stats", timeout=5) as response:
        assert json.loads(response.read())["requests"] == 1
    reset = urllib.request.Request(f"{root}/_callqa/reset", data=b"", method="POST")
    with urllib.request.urlopen(reset, timeout=5) as response:
        assert json.loads(response.read())["requests"] == 0
    assert server.requests == 0


def test_the_arrivals_endpoint_gives_each_request_its_arrival_time(fake: Any) -> None:
    import time

    server = fake()
    root = server.base_url.removesuffix("/v1")
    before = time.monotonic()
    post(server, chat("a"))
    post(server, chat("b"))
    after = time.monotonic()
    with urllib.request.urlopen(f"{root}/_callqa/arrivals", timeout=5) as response:
        arrived = json.loads(response.read())["monotonic"]
    assert len(arrived) == 2 and before <= arrived[0] <= arrived[1] <= after
    reset = urllib.request.Request(f"{root}/_callqa/reset", data=b"", method="POST")
    urllib.request.urlopen(reset, timeout=5).close()
    with urllib.request.urlopen(f"{root}/_callqa/arrivals", timeout=5) as response:
        assert json.loads(response.read())["monotonic"] == []


def test_request_cap_answers_503(fake: Any) -> None:
    server = fake(max_requests=2)
    assert [post(server, chat(str(i)))[0] for i in range(3)] == [200, 200, 503]


def test_unknown_faults_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        FakeOpenAIServer(faults=("418",))
    assert "timeout" in FAULTS


def test_embeddings_are_deterministic_unit_scale_vectors(fake: Any) -> None:
    server = fake()
    status, _, reply = post(server, {"model": "e", "input": ["refund", "sky", "refund"]},
                            path="/embeddings")
    assert status == 200 and reply["object"] == "list"
    vectors = [item["embedding"] for item in reply["data"]]
    assert [item["index"] for item in reply["data"]] == [0, 1, 2]
    assert vectors[0] == vectors[2] != vectors[1]
    assert all(len(v) == 8 and all(-1.0 <= x <= 1.0 for x in v) for v in vectors)
    assert reply["usage"]["prompt_tokens"] >= 3


def test_a_failing_reply_callback_is_a_visible_500(fake: Any) -> None:
    def broken(body: dict[str, Any]) -> str:
        raise KeyError("oops")

    status, _, body = post(fake(reply=broken), chat("a"))
    assert status == 500 and "KeyError" in body["error"]["message"]


def _judge_body(seed: int) -> dict[str, Any]:
    metrics = [{"metric": f"m{i}", "scale": "likert5"} for i in range(20)]
    return {"model": "m", "seed": seed,
            "messages": [{"role": "user", "content": json.dumps({"metrics": metrics})}]}


def test_judge_noise_is_seeded_by_the_request(fake: Any) -> None:
    noisy = fake(judge_noise=0.5, seed=11)
    scores = {}
    for seed in (0, 1000, 0):
        status, _headers, reply = post(noisy, _judge_body(seed))
        assert status == 200
        verdicts = json.loads(content(reply))
        scores.setdefault(seed, []).append([verdicts[f"m{i}"]["score"] for i in range(20)])
    # The same request gets the same answer; another seed another draw.
    assert scores[0][0] == scores[0][1]
    assert scores[0][0] != scores[1000][0]
    # About half the verdicts leave the middle of the scale, every one stays on it.
    moved = [s for s in scores[0][0] if s != mid_score("likert5")]
    assert 3 <= len(moved) <= 17
    assert all(s in (1.0, 2.0, 3.0, 4.0, 5.0) for s in scores[0][0] + scores[1000][0])
    quiet = fake()
    _status, _headers, reply = post(quiet, _judge_body(1000))
    assert {v["score"] for v in json.loads(content(reply)).values()} == {mid_score("likert5")}


def test_judge_noise_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="judge_noise must be within"):
        FakeOpenAIServer(judge_noise=1.5)
