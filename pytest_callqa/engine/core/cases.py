"""Golden cases: the human truth a model output is scored against (files are read by
``engine.loading``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .numbers import finite_number

_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
_TIME_PATTERN = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d{2}(?:\.\d+)?)$")
# A speaker label is a letter of any script ("Émile", "客户", "रोगी") and up to 40 more
# characters up to a colon and a space, or a full-width colon ("客服：您好", which takes
# none): with an ASCII first letter only, "Émile: ..." was folded into the previous turn.
_LINE_PATTERN = re.compile(
    r"^\s*(?:\[(?P<start>[\d:.]+)\]\s*)?"
    r"(?:(?P<speaker>[^\W\d_][^:\uff1a\n]{0,40}?)\s*(?::\s+|\uff1a\s*))?"
    r"(?P<text>.*\S)\s*$"
)


def parse_timestamp(value: Any) -> float | None:
    """Seconds from ``"mm:ss"``, ``"hh:mm:ss"``, or a number of seconds; None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a timestamp must be 'mm:ss', 'hh:mm:ss' or seconds, not a boolean")
    if isinstance(value, (int, float)):
        # NaN fails the comparison; infinity would pass it and break every prompt's timeline.
        if not (finite_number(value) and value >= 0):
            raise ValueError(f"timestamp {value!r} must be a non-negative number of seconds")
        return float(value)
    if isinstance(value, str):
        match = _TIME_PATTERN.match(value.strip())
        if match:
            hours, minutes, seconds = match.groups()
            if float(seconds) >= 60:
                raise ValueError(f"timestamp {value!r} has {seconds} seconds")
            return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    raise ValueError(f"timestamp {value!r} is not 'mm:ss', 'hh:mm:ss' or a number of seconds")


def format_timestamp(seconds: float) -> str:
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class Turn(BaseModel):
    """One turn of a call; ``start`` is in seconds from the start of the call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    speaker: str = ""
    text: str
    start: float | None = None

    @field_validator("start", mode="before")
    @classmethod
    def _parse_start(cls, value: Any) -> float | None:
        return parse_timestamp(value)


def _turns_from_text(text: str) -> list[Turn]:
    turns = []
    for line in text.splitlines():
        match = _LINE_PATTERN.match(line)
        if not match:
            continue
        turns.append(
            Turn(
                speaker=(match.group("speaker") or "").strip(),
                text=match.group("text").strip(),
                start=parse_timestamp(match.group("start")),
            )
        )
    return turns


class HumanLabel(BaseModel):
    """What people said one metric of the case's labelled output is worth (calibration).

    ``value`` is on the metric's scale; whether it is, and whether the metric exists, is
    checked by the loader against the registry (``engine.calibration.label_problems``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    labeler: str | None = None
    note: str | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        # pydantic would read true as 1.0 and "0.5" as 0.5: a label must be written as a number.
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"a label must be a number on the metric's scale, got "
                             f"{type(value).__name__} {value!r}")
        return value


class GoldenCase(BaseModel):
    """A golden case as written in a case file (SPEC section 3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    task: str
    transcript: list[Turn] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    expected_outcome: Any = None
    tags: list[str] = Field(default_factory=list)
    source: str | None = None
    description: str | None = None
    # Metric id -> what people gave the case's labelled output; a bare number is short for
    # {value: number}. Read by --callqa-calibrate (docs/calibration.md). Left out of dumps:
    # a judge must never see what people said, and cache keys stay as they were.
    human_labels: dict[str, HumanLabel] = Field(default_factory=dict, exclude=True)
    path: str | None = Field(default=None, exclude=True)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        # fullmatch: "$" also matches before a final newline, which let "qa-1\n" in.
        if not _ID_PATTERN.fullmatch(value):
            raise ValueError(
                f"id {value!r} must start with a letter or digit and use only letters, digits "
                "and . _ : - (it becomes part of test ids and file names)"
            )
        return value

    @field_validator("human_labels", mode="before")
    @classmethod
    def _bare_labels(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: v if isinstance(v, dict) else {"value": v} for k, v in value.items()}
        return value

    @field_validator("transcript", mode="before")
    @classmethod
    def _parse_transcript(cls, value: Any) -> Any:
        if isinstance(value, str):
            return _turns_from_text(value)
        return value

    @property
    def transcript_text(self) -> str:
        """The transcript as lines of ``[mm:ss] speaker: text`` (parts omitted when absent)."""
        lines = []
        for turn in self.transcript:
            stamp = f"[{format_timestamp(turn.start)}] " if turn.start is not None else ""
            who = f"{turn.speaker}: " if turn.speaker else ""
            lines.append(f"{stamp}{who}{turn.text}")
        return "\n".join(lines)

    @property
    def transcript_plain(self) -> str:
        return "\n".join(turn.text for turn in self.transcript)


def error_location(loc: Iterable[Any]) -> str:
    """Render a pydantic error location as a field path such as ``questions[2].score``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(top level)"


def validation_problems(error: ValidationError, prefix: str = "") -> list[str]:
    problems = []
    for item in error.errors():
        where = error_location(item["loc"])
        if prefix:
            where = prefix if where == "(top level)" else f"{prefix}.{where}"
        problems.append(f"{where}: {item['msg']}")
    return problems
