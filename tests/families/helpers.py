"""Builders shared by the family tests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_callqa.engine.core.judging import JudgeRequest, JudgeVerdict


class ScriptedJudge:
    """A judge answering per metric, and per item where a mapping is given.

    ``scores[metric]`` is a number (every request of that metric), None (not scored), or a
    mapping from the request's item ("turn 3") to a number. ``details[metric]`` is added to
    every verdict of that metric, ``item_details[metric][item]`` to one item's verdict.
    """

    name = "scripted"

    def __init__(self, scores: Mapping[str, Any],
                 details: Mapping[str, Mapping[str, Any]] | None = None,
                 item_details: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
                 ) -> None:
        self.scores = dict(scores)
        self.details = dict(details or {})
        self.item_details = dict(item_details or {})
        self.seen: list[JudgeRequest] = []

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.seen.extend(requests)
        out = []
        for r in requests:
            score = self.scores.get(r.metric)
            if isinstance(score, Mapping):
                score = score.get(r.item or "")
            details = {**self.details.get(r.metric, {}),
                       **self.item_details.get(r.metric, {}).get(r.item or "", {})}
            out.append(JudgeVerdict(metric=r.metric, score=score,
                                    reason=f"scripted {r.metric} {r.item or ''}".strip(),
                                    details=details))
        return out


def tool_call(name: str, **arguments: Any) -> dict[str, str]:
    return {"speaker": "tool_call",
            "text": json.dumps({"name": name, "arguments": arguments})}


def tool_result(text: str) -> dict[str, str]:
    return {"speaker": "tool_result", "text": text}


def write_case(tmp_path: Any, body: str, name: str = "case.yaml") -> Any:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path
