"""Builders shared by the engine tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_callqa.engine.anchors import Anchor, anchor_supported, extract_anchors
from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.judging import JudgeRequest, JudgeVerdict
from pytest_callqa.engine.embeddings import TfidfEmbedder

TFIDF = TfidfEmbedder()


def unsupported_anchors(text: str, *contexts: str) -> list[Anchor]:
    """Anchors of ``text`` that none of ``contexts`` supports (by value)."""
    context = [a for c in contexts for a in extract_anchors(c)]
    return [a for a in extract_anchors(text) if not anchor_supported(a, context)]


def make_case(task: str, expected: Any, *, config: Mapping[str, Any] | None = None,
              transcript: Any = "agent: Hello, how can I help?\ncustomer: I need help.",
              case_id: str = "case-1") -> GoldenCase:
    case = GoldenCase.model_validate({
        "id": case_id, "task": task, "transcript": transcript,
        "config": dict(config or {}), "expected_outcome": expected,
    })
    from pytest_callqa.engine.registry import default_registry

    problems = default_registry().task(task).check_case(case)
    assert not problems, problems
    return case


class FixedJudge:
    """A judge that answers fixed scores per metric (None = not scored)."""

    name = "fixed"

    def __init__(self, scores: Mapping[str, float | None], **details: Any) -> None:
        self.scores = dict(scores)
        self.details = details
        self.seen: list[JudgeRequest] = []

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.seen.extend(requests)
        return [
            JudgeVerdict(metric=r.metric, score=self.scores.get(r.metric),
                         reason=f"fixed {r.metric}", details=dict(self.details.get(r.metric, {})))
            for r in requests
        ]


def question(qid: str, score: float, max_score: float = 5, qtype: str = "SCORE",
             reason: str = "Agent said \"Hello, how can I help?\"") -> dict[str, Any]:
    return {"question_id": qid, "score": score, "max_score": max_score, "type": qtype,
            "reason": reason}


def asked(expected: Mapping[str, Any]) -> dict[str, Any]:
    """The QA config that asks exactly the questions of an expected scorecard."""
    return {"questions": [{"question_id": q["question_id"], "type": q["type"],
                           "max_score": q["max_score"]} for q in expected["questions"]]}
