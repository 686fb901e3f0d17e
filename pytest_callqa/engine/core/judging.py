"""The judge protocol: what a task asks, what a judge answers.

A task lists every judgement it needs up front (``TaskSpec.plan``) so a judge receives a whole
batch at once: an LLM judge can deduplicate, cache, combine per-output metrics into one call
and run calls concurrently; the heuristic judge just loops.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .numbers import finite_number

if TYPE_CHECKING:
    from .cases import GoldenCase

# Scales a judge may be asked for; validation of a reply depends on it.
Scale = Literal["unit", "binary", "ternary", "likert5", "rubric0_5"]

SCALE_RANGES: dict[str, tuple[float, float]] = {
    "unit": (0.0, 1.0),
    "binary": (0.0, 1.0),
    "ternary": (0.0, 1.0),
    "likert5": (1.0, 5.0),
    "rubric0_5": (0.0, 5.0),
}
DISCRETE_SCALES: dict[str, tuple[float, ...]] = {
    "binary": (0.0, 1.0),
    "ternary": (0.0, 0.5, 1.0),
    "likert5": (1.0, 2.0, 3.0, 4.0, 5.0),
    "rubric0_5": (0.0, 1.0, 2.0, 3.0, 4.0, 5.0),
}


# The seed's ratios over a text output's highlights and facts have nothing to count in an
# output with none: no judge is asked, and the family and the offline judge (should it be
# asked) word it alike.
NO_HIGHLIGHT = "not scored: no highlight returned"
NO_FACT = "n/a: the output states no fact"


def valid_score(scale: str, score: Any) -> bool:
    """Whether ``score`` is a legal answer on ``scale`` (numbers only, in range, on the grid)."""
    if not finite_number(score):
        return False
    low, high = SCALE_RANGES[scale]
    if not low <= score <= high:
        return False
    grid = DISCRETE_SCALES.get(scale)
    # Most scores sit exactly on the grid: found without the tolerant scan.
    return grid is None or score in grid or any(abs(score - g) < 1e-9 for g in grid)


def lowest_score(scale: str) -> float:
    """The conservative score given when a judge's reply cannot be used."""
    return SCALE_RANGES[scale][0]


@dataclass(frozen=True)
class JudgeView:
    """A family's context policy: what a judge call may show besides each metric's ``focus``.

    The call-intelligence tasks show everything (their seed judges an output against the
    transcript and the truth); a family whose seed judges from less (a turn and its window, a
    signal and its excerpt, the agent's replay) puts that in the focus and shows nothing else.
    ``units_apart``: each unit (a turn) is judged in a call of its own even when the judge
    combines an output's metrics — seed 004 judges a turn blind to the turns after it, which
    the other turns' blocks of one call would show.
    """

    transcript: bool = True
    model_output: bool = True
    expected_outcome: bool = True
    config: bool = True
    units_apart: bool = False

    @property
    def focus_only(self) -> bool:
        """Whether a call shows nothing but each metric's focus."""
        return not (self.transcript or self.model_output or self.expected_outcome
                    or self.config)


FULL_VIEW = JudgeView()
FOCUS_VIEW = JudgeView(transcript=False, model_output=False, expected_outcome=False,
                       config=False)
# A field a verdict must carry besides its score and reason: (name, type, what it says).
# Types: "code" (a snake_case label or null), "turns" (a list of turn numbers), "count" (a
# whole number >= 0) and the scale names (a score on that scale).
ReplyField = tuple[str, str, str]


@dataclass(frozen=True)
class JudgeRequest:
    """One judgement: a metric of one model output for one golden case.

    ``focus`` carries what the task extracted for this metric (the reasons to check, the
    facts of a summary, the pair of call purposes...), so judges need no task knowledge to
    find it; ``instructions`` says what the score means on ``scale``.
    """

    case: GoldenCase
    task: str
    metric: str
    scale: Scale
    instructions: str
    model_output: Any
    focus: Mapping[str, Any] = field(default_factory=dict)
    # Set when a metric is judged once per unit of an output (a turn, a signal): the task
    # then finds each verdict under ``verdict_key``.
    item: str | None = None
    # Set by a family whose seed scores an out-of-range judge reply itself (the conversation
    # family: lowest score, with a warning); otherwise such a reply is a judge error.
    keeps_out_of_range: bool = False
    view: JudgeView = FULL_VIEW
    reply_fields: tuple[ReplyField, ...] = ()
    # Which run of a repeated evaluation (--callqa-runs) and which repeat of the judgement
    # (--callqa-judge-repeats) this is: each (run, repeat) is a judgement of its own.
    run: int = 0
    repeat: int = 0

    def __init__(
        self, case: GoldenCase, task: str, metric: str, scale: Scale, instructions: str,
        model_output: Any, focus: Mapping[str, Any] | None = None, item: str | None = None,
        keeps_out_of_range: bool = False, view: JudgeView = FULL_VIEW,
        reply_fields: tuple[ReplyField, ...] = (), run: int = 0, repeat: int = 0,
    ) -> None:
        # The frozen dataclass's own __init__ sets each field through object.__setattr__,
        # two thirds of building a request (a batch builds one per judgement): the fields
        # go straight into the instance's dict, where that __init__ puts them. The fields,
        # their order and defaults are the ones declared above (test_judging checks).
        fields = self.__dict__
        fields["case"] = case
        fields["task"] = task
        fields["metric"] = metric
        fields["scale"] = scale
        fields["instructions"] = instructions
        fields["model_output"] = model_output
        fields["focus"] = {} if focus is None else focus
        fields["item"] = item
        fields["keeps_out_of_range"] = keeps_out_of_range
        fields["view"] = view
        fields["reply_fields"] = reply_fields
        fields["run"] = run
        fields["repeat"] = repeat

    @property
    def verdict_key(self) -> str:
        """The key the task reads this request's verdict under: ``metric`` or ``metric[item]``."""
        return self.metric if self.item is None else f"{self.metric}[{self.item}]"

    @functools.cached_property
    def key(self) -> str:
        """A stable content hash; equal requests are judged once. Worked out on first use
        and kept (a request is frozen): a batch asks each request's key several times, and
        each asking hashed the whole case again."""
        content: dict[str, Any] = {
            "case": self.case.model_dump(mode="json"),
            "task": self.task,
            "metric": self.metric,
            "scale": self.scale,
            "instructions": self.instructions,
            "output": self.model_output,
            "focus": self.focus,
        }
        # Only requests that set them carry these, so keys of all others are unchanged.
        if self.item is not None:
            content["item"] = self.item
        if self.view != FULL_VIEW:
            view = dataclasses.asdict(self.view)
            if not self.view.units_apart:
                # Keys made before the field existed stay as they were.
                del view["units_apart"]
            content["view"] = view
        if self.reply_fields:
            content["reply_fields"] = [list(f) for f in self.reply_fields]
        if self.run:
            content["run"] = self.run
        if self.repeat:
            content["repeat"] = self.repeat
        payload = json.dumps(
            content,
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class JudgeVerdict:
    """A judge's answer. ``score`` None means *not scored*; ``judge_error`` that the judge
    could not give a verdict at all (a failure of the tool, never of the model); ``flagged``
    that ``score`` is a fallback a task's own rule chose for a reply out of its range."""

    metric: str
    score: float | None
    reason: str
    expected_outcome_reference: str = ""
    model_output_observed: str = ""
    flagged: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)
    judge_error: bool = False

    def record(self, judge: str) -> dict[str, Any]:
        """The builtins-only record kept on a result (reports, snapshots); ``judge_error``
        appears only when set, so records of given verdicts keep their shape."""
        record: dict[str, Any] = {
            "metric": self.metric,
            "judge": judge,
            "score": self.score,
            "expected_outcome_reference": self.expected_outcome_reference,
            "model_output_observed": self.model_output_observed,
            "reason": self.reason,
            "flagged": self.flagged,
        }
        if self.judge_error:
            record["judge_error"] = True
        # A verdict asked more than once (judges/repeats.py) keeps what each ask gave.
        if "judge_repeats" in self.details:
            record["repeats"] = list(self.details["judge_repeats"])
            record["repeat_spread"] = self.details.get("repeat_spread")
            record["repeats_disagree"] = bool(self.details.get("repeats_disagree"))
            if "repeats_off_scale" in self.details:
                record["repeats_off_scale"] = list(self.details["repeats_off_scale"])
        return record


@runtime_checkable
class Judge(Protocol):
    """Anything that answers judge requests, in order, one verdict per request."""

    name: str

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]: ...


@runtime_checkable
class StreamingJudge(Judge, Protocol):
    """A judge that can hand on each call's verdicts, by request key, as they come in."""

    def judge_as_ready(self, requests: Sequence[JudgeRequest],
                       on_verdicts: Callable[[Mapping[str, JudgeVerdict]], None] | None,
                       ) -> list[JudgeVerdict]: ...
