"""syrupy support: snapshots of what the judge said, stable across runs.

:class:`JudgeRecordExtension` writes judge records (``TaskResult.judge_record``) as JSON with
floats rounded to 3 places and volatile values (timings, timestamps, token usage, ids)
masked, so a snapshot changes when the judge's verdict changes and not otherwise::

    @pytest.fixture
    def callqa_snapshot(snapshot):
        return snapshot.use_extension(JudgeRecordExtension)

    def test_judge(callqa_result, callqa_snapshot):
        assert callqa_result.judge_record == callqa_snapshot

Accept a changed verdict with ``pytest --snapshot-update``. A record of a verdict the judge
could not give (``judge_error``) is neither compared nor written: the test is an error of the
tool (``JudgeUnavailable``), and the verdict accepted before stays.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension
from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SerializedData

from .engine.core.results import JudgeUnavailable
from .engine.core.urls import SHORTEST_REPLY_SECRET

MASK = "<masked>"
DIGITS = 3
# Keys whose values differ between two runs that reach the same verdict.
VOLATILE_KEYS: frozenset[str] = frozenset({
    "latency", "latency_s", "latency_ms", "elapsed", "elapsed_s", "duration", "duration_s",
    "timestamp", "created", "created_at", "written", "time", "usage", "cost_usd",
    "prompt_tokens", "completion_tokens", "total_tokens", "cached", "cached_calls",
    "attempts", "id", "request_id", "system_fingerprint",
})


def stable(value: Any, *, digits: int = DIGITS,
           volatile: frozenset[str] = VOLATILE_KEYS) -> Any:
    """``value`` as builtins with floats rounded and volatile keys masked.

    The value of ``OPENAI_API_KEY``, should it appear in any text, is replaced as well: a
    snapshot is committed to the repository. A value shorter than any key an API issues is a
    placeholder for a keyless server (``x``, ``none``), as the judge's redaction treats it:
    replaced, it rewrote every word holding it, so a developer's placeholder and CI's key
    failed each other's snapshots.
    """
    secret = os.environ.get("OPENAI_API_KEY") or ""
    if len(secret) < SHORTEST_REPLY_SECRET:
        secret = ""

    def convert(item: Any) -> Any:
        if isinstance(item, BaseModel):
            return convert(item.model_dump(mode="json"))
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return convert(dataclasses.asdict(item))
        if isinstance(item, Mapping):
            return {str(k): MASK if str(k) in volatile else convert(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [convert(v) for v in item]
        if isinstance(item, bool) or item is None or isinstance(item, int):
            return item
        if isinstance(item, float):
            if not math.isfinite(item):
                return str(item)
            rounded = round(item, digits)
            return 0.0 if rounded == 0 else rounded  # no "-0.0" next to "0.0"
        if isinstance(item, str):
            return item.replace(secret, "<redacted>") if secret else item
        return convert(str(item))

    return convert(value)


class JudgeRecordExtension(JSONSnapshotExtension):
    """JSON snapshots of judge records: rounded floats, masked volatile fields."""

    digits: ClassVar[int] = DIGITS
    volatile_keys: ClassVar[frozenset[str]] = VOLATILE_KEYS

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> SerializedData:
        return super().serialize(
            stable(data, digits=self.digits, volatile=self.volatile_keys),
            exclude=exclude, include=include, matcher=matcher,
        )


class JudgedSnapshotAssertion(SnapshotAssertion):
    """syrupy's assertion, refusing judge records of verdicts the judge could not give before
    syrupy compares them: written as the expected verdict, a judge error would fail the next
    good run as a changed verdict, and compared it would fail the model for the tool's
    failure. (syrupy turns an exception raised while it compares into a failed assertion, so
    the check comes first.)"""

    def __eq__(self, other: object) -> bool:
        failed = sorted(_judge_errors(stable(other)))
        if failed:
            raise JudgeUnavailable(
                f"the judge could not give the verdict(s) of {', '.join(failed)}: not "
                "compared with the snapshot, and not written as the expected one")
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


def judged(assertion: SnapshotAssertion) -> JudgedSnapshotAssertion:
    """``assertion`` (syrupy's fixture, as it made it) as a :class:`JudgedSnapshotAssertion`;
    syrupy builds the assertions derived from it (``with_defaults``) of the same class."""
    assertion.__class__ = JudgedSnapshotAssertion
    return assertion  # type: ignore[return-value]


def _judge_errors(value: Any) -> set[str]:
    """The metrics of the judge records in ``value`` that are judge errors: marked so, or
    with a repeat of the judgement the judge could not give (``--callqa-judge-repeats``: a
    ``null`` among the record's ``repeats``)."""
    if isinstance(value, list):
        return set().union(*(_judge_errors(v) for v in value))
    if isinstance(value, dict):
        repeats = value.get("repeats")
        if value.get("judge_error") is True or (
                isinstance(repeats, list) and any(r is None for r in repeats)):
            return {str(value.get("metric", "a verdict"))}
        return set().union(*(_judge_errors(v) for v in value.values()))
    return set()
