"""Judge repeats (``--callqa-judge-repeats K``): every verdict asked K times, each a request of
its own (its own cache entry and seed), and combined into one.

The combined score is the median of the repeats that gave one (the lower of the two middle
values on a discrete scale, so it stays on the scale, and for a verdict that gives counts
beside its score, so its score and counts are one repeat's; their mean on the continuous
0–1 scale otherwise) or, on a 0/1 scale, the majority (a tie is 0: a pass needs more than
half). A verdict
whose repeats spread over more than ``tolerance`` of the scale is marked
``repeats_disagree``. Repeats that failed (judge errors) are left out when the others decide
the verdict — it is the same whether each failed one would have given the scale's lowest
score or its highest; otherwise, and when none gave a score, the verdict is the first failed
repeat's judge error.

:func:`repeat_agreement` reads the judge's test-retest agreement per metric from the
results' judge records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..core.judging import (
    SCALE_RANGES,
    Judge,
    JudgeRequest,
    JudgeVerdict,
    StreamingJudge,
    lowest_score,
    valid_score,
)
from ..core.results import TaskResult

REPEATS_KEY = "judge_repeats"
# The positions (from 0) of the asks whose reply stayed off the scale, when some did.
REPEATS_OFF_SCALE = "repeats_off_scale"


class RepeatedJudge:
    """``inner`` asked ``repeats`` times per request; implements :class:`Judge`. Anything
    else (usage, description) is the inner judge's."""

    def __init__(self, inner: Judge, repeats: int, tolerance: float) -> None:
        if repeats < 1:
            raise ValueError(f"judge repeats must be >= 1, got {repeats}")
        if tolerance < 0:
            raise ValueError(f"repeat tolerance must be >= 0, got {tolerance}")
        self.inner = inner
        self.name = inner.name
        self.repeats = repeats
        self.tolerance = tolerance

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        return self.judge_as_ready(requests, None)

    def judge_as_ready(self, requests: Sequence[JudgeRequest],
                       on_verdicts: Callable[[Mapping[str, JudgeVerdict]], None] | None,
                       ) -> list[JudgeVerdict]:
        """:meth:`judge`, handing ``on_verdicts`` each request's combined verdict as soon
        as its last repeat is in (all at the end, when the inner judge cannot say sooner)."""
        k = self.repeats
        asked = [dataclasses.replace(r, repeat=j) for r in requests for j in range(k)]
        if not asked:
            return []
        if on_verdicts is not None and isinstance(self.inner, StreamingJudge):
            answers = self.inner.judge_as_ready(asked, self._as_ready(requests, asked,
                                                                      on_verdicts))
        else:
            answers = self.inner.judge(asked)
        combined = [combine(request, answers[i * k:(i + 1) * k], self.tolerance)
                    for i, request in enumerate(requests)]
        if on_verdicts is not None and not isinstance(self.inner, StreamingJudge):
            on_verdicts({r.key: v for r, v in zip(requests, combined, strict=True)})
        return combined

    def _as_ready(self, requests: Sequence[JudgeRequest], asked: list[JudgeRequest],
                  on_verdicts: Callable[[Mapping[str, JudgeVerdict]], None],
                  ) -> Callable[[Mapping[str, JudgeVerdict]], None]:
        """The inner judge's callback: a request's verdict, combined once all its repeats
        are in. The inner judge hands on each distinct key once, so the first asker of a
        request asked twice is combined from the verdicts as :meth:`judge` gets them."""
        k = self.repeats
        # Keys are content hashes: each is worked out once here.
        asked_keys = [a.key for a in asked]
        owner: dict[str, tuple[str, JudgeRequest]] = {}
        repeats_of: dict[str, list[str]] = {}
        for i, request in enumerate(requests):
            own = asked_keys[i * k:(i + 1) * k]
            request_key = request.key
            repeats_of.setdefault(request_key, own)
            for key in own:
                owner.setdefault(key, (request_key, request))
        known: dict[str, JudgeVerdict] = {}
        done: set[str] = set()

        def arrived(new: Mapping[str, JudgeVerdict]) -> None:
            known.update(new)
            for key in new:
                request_key, request = owner[key]
                keys = repeats_of[request_key]
                if request_key not in done and all(one in known for one in keys):
                    done.add(request_key)
                    on_verdicts({request_key: combine(
                        request, [known[one] for one in keys], self.tolerance)})

        return arrived


def _median(scores: list[float], scale: str, counted: bool) -> float:
    """The middle score, the lower of the two middles of an even count (on a 0/1 scale the
    majority, a tie 0); the mean of the two on the 0-1 scale of a verdict without counts."""
    ordered = sorted(scores)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    # A verdict that gives counts keeps one ask's score: the mean of 1.0 (10 of 10 facts
    # supported) and 0.5 (5 of 10) was 0.75 beside one ask's counts, 10 of 10.
    if scale == "unit" and not counted:
        return (ordered[middle - 1] + ordered[middle]) / 2
    return ordered[middle - 1]


def _as_scored(verdict: JudgeVerdict, scale: str) -> float | None:
    """An ask's score as the families score it: a reply that stayed off the scale (flagged)
    counts as the scale's lowest — its raw figure, 7.5 on 1-5, was the highest of the asks
    and moved the median up. None for an ask that gave no score."""
    if verdict.judge_error or verdict.score is None:
        return None
    return float(verdict.score) if valid_score(scale, verdict.score) else lowest_score(scale)


def combine(request: JudgeRequest, verdicts: Sequence[JudgeVerdict],
            tolerance: float) -> JudgeVerdict:
    """One verdict from the repeats of ``request`` (module docstring)."""
    usage: dict[str, float] = {}
    for verdict in verdicts:
        for key, amount in verdict.usage.items():
            usage[key] = usage.get(key, 0.0) + amount
    scored = [_as_scored(v, request.scale) for v in verdicts]
    given = [v for v, score in zip(verdicts, scored, strict=True) if score is not None]
    if not given:
        # Its asks are still counted, each one that gave no score (repeat_agreement).
        return dataclasses.replace(verdicts[0], usage=usage, details={
            **verdicts[0].details, REPEATS_KEY: [None] * len(verdicts)})
    # Which asks stayed off the scale: scored as its lowest, but no score the judge gave, so
    # the test-retest agreement leaves them out (repeat_agreement).
    off_scale = {REPEATS_OFF_SCALE: off} if (off := [
        i for i, (v, score) in enumerate(zip(verdicts, scored, strict=True))
        if score is not None and not valid_score(request.scale, v.score)]) else {}
    scores = [score for score in scored if score is not None]
    counted = any(kind == "count" for _name, kind, _meaning in request.reply_fields)
    score = _median(scores, request.scale, counted)
    low, high = SCALE_RANGES[request.scale]
    failed = [v for v in verdicts if v.judge_error]
    if failed and any(_median(scores + [bound] * len(failed), request.scale, counted)
                      != score for bound in (low, high)):
        # The failed asks could have moved the verdict (of [5, error, 2] the lower middle
        # is 2): what the judge would have said is unknown, a failure of the tool.
        return dataclasses.replace(failed[0], usage=usage, details={
            **failed[0].details,
            REPEATS_KEY: scored, **off_scale},
            reason=f"{failed[0].reason} ({len(failed)} of {len(verdicts)} asks failed, and "
                   "the scores of the others do not decide the verdict)")
    # Over the scores the judge gave on the scale: a reply off it is flagged, not a judge
    # disagreeing with itself (as repeat_agreement leaves it out of the agreement).
    on_scale = [score for i, score in enumerate(scored)
                if score is not None and i not in off_scale.get(REPEATS_OFF_SCALE, ())]
    spread = (max(on_scale) - min(on_scale)) / (high - low) if on_scale else 0.0
    chosen = given[min(range(len(given)), key=lambda i: abs(scores[i] - score))]
    details = dict(chosen.details)
    details[REPEATS_KEY] = scored
    details.update(off_scale)
    details["repeat_spread"] = round(spread, 6)
    details["repeats_disagree"] = spread > tolerance + 1e-12
    # One ask's unusable reply marks the verdict, whichever ask it keeps.
    return dataclasses.replace(chosen, score=score, details=details, usage=usage,
                               flagged=any(v.flagged for v in given))


def repeat_agreement(results: Iterable[TaskResult]) -> dict[str, dict[str, Any]]:
    """Per metric, over the verdicts asked more than once that at least two asks scored: how
    many (``n``), the share whose scored asks all gave the same score (``exact``; None with
    none), the mean spread as a share of the scale (``mean_spread``) and how many spread
    beyond the tolerance (``disagree``); and how many verdicts had an ask that gave no score
    or one off the scale (``failed_asks``). An ask that failed says nothing of the judge's
    agreement with itself: counted as a disagreement, a server's error lowered it. Nor does one
    off the scale, scored as the scale's lowest: [7.5, 1] on 1-5 was an exact agreement."""
    found: dict[str, list[tuple[bool, float, bool]]] = {}
    failed: dict[str, int] = {}
    for result in results:
        for record in result.judge_records:
            repeats = record.get("repeats")
            if not isinstance(repeats, list) or len(repeats) < 2:
                continue
            metric = str(record.get("metric"))
            off_scale = record.get(REPEATS_OFF_SCALE) or ()
            scores = [s for i, s in enumerate(repeats) if s is not None and i not in off_scale]
            failed[metric] = failed.get(metric, 0) + (len(scores) < len(repeats))
            rows = found.setdefault(metric, [])
            if len(scores) >= 2:
                rows.append((len(set(scores)) == 1, float(record.get("repeat_spread") or 0.0),
                             bool(record.get("repeats_disagree"))))
    return {
        metric: {"n": len(rows), "exact": sum(r[0] for r in rows) / len(rows) if rows else None,
                 "mean_spread": sum(r[1] for r in rows) / len(rows) if rows else None,
                 "disagree": sum(r[2] for r in rows), "failed_asks": failed[metric]}
        for metric, rows in sorted(found.items())
    }
