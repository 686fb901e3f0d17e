"""What a task sees of one model output: the output parsed and checked against the task's
schema, with the case's validated truth and config (the first phase of an evaluation)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .cases import GoldenCase, validation_problems
from .results import MetricResult
from .unicode_text import json_may_hold_lone, without_lone_surrogates

if TYPE_CHECKING:
    from ..embeddings import Embedder

T = TypeVar("T")

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)\n?```$", re.DOTALL)
STRUCTURE = "response_structure_compliance"


class Deferred(Generic[T]):
    """A value built by ``make`` when it is first asked for, then kept."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make: Callable[[], T] | None = make
        self._value: T | None = None

    def get(self) -> T:
        if self._make is not None:
            self._value, self._make = self._make(), None
        return self._value  # type: ignore[return-value]


@dataclass
class EvalContext:
    """Everything a task needs to plan and score one output. The embedder may be deferred
    (:class:`Deferred`): a family that compares no texts never loads it."""

    case: GoldenCase
    raw_output: Any
    output: Any
    parsed: BaseModel | None
    expected: BaseModel
    config: BaseModel
    structure: MetricResult
    embedder_source: Embedder | Deferred[Embedder]
    model: str | None = None
    run: int = 0
    benchmarks: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def embedder(self) -> Embedder:
        source = self.embedder_source
        return source.get() if isinstance(source, Deferred) else source


def parse_output(raw: Any, pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
                 ) -> tuple[Any, str | None, list[str]]:
    """Turn what a model returned into a JSON value.

    Returns ``(value, problem, notes)``; ``problem`` says why the output is not JSON. A reply
    wrapped in one Markdown code fence is unwrapped (and noted), as chat models often do that.
    Unpaired UTF-16 surrogates (a ``\ud800`` escape alone) are not Unicode any text can carry:
    each is replaced by U+FFFD, and noted. ``pairs_hook`` builds each JSON object of text
    from its key-value pairs (``json.loads``'s ``object_pairs_hook``).
    """
    value, problem, notes, text = _parse_output(raw, pairs_hook)
    if text is not None and pairs_hook is None and not json_may_hold_lone(text):
        # Every string of the value is one of the text's.
        return value, problem, notes
    value, replaced = without_lone_surrogates(value)
    if replaced:
        notes.append(f"output held unpaired UTF-16 surrogates (not valid Unicode) in "
                     f"{replaced} string(s); each was replaced by U+FFFD")
    return value, problem, notes


def _parse_output(raw: Any, pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None,
                  ) -> tuple[Any, str | None, list[str], str | None]:
    """:func:`parse_output`'s value, problem and notes before the surrogates are replaced,
    and the JSON text the value was decoded from (None: it was not)."""
    notes: list[str] = []
    if isinstance(raw, (dict, list)):
        return raw, None, notes, None
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, "output is not UTF-8 text", notes, None
    if not isinstance(raw, str):
        kind = type(raw).__name__
        return None, f"output of type {kind} is neither JSON text nor an object", notes, None
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group("body").strip()
        notes.append("output was wrapped in a Markdown code fence; the fence was removed")
    if not text:
        return None, "output is empty", notes, None
    try:
        return json.loads(text, object_pairs_hook=pairs_hook), None, notes, text
    except json.JSONDecodeError as exc:
        preview = text[:60].replace("\n", " ")
        return (None, f"output is not valid JSON ({exc.msg} at char {exc.pos}): {preview!r}",
                notes, None)
    except (ValueError, RecursionError) as exc:
        return None, f"output cannot be read as JSON ({unreadable_json(exc)})", notes, None


def unreadable_json(exc: ValueError | RecursionError) -> str:
    """Why JSON (or YAML) text that parses in principle could not be read: a number of over
    4,300 digits (Python's limit on converting them) or nesting deeper than its recursion
    limit."""
    return "it is nested deeper than Python reads" if isinstance(exc, RecursionError) \
        else str(exc)


def check_structure(
    model_cls: type[BaseModel], value: Any
) -> tuple[BaseModel | None, MetricResult]:
    """Validate ``value`` strictly against a task's output model (SPEC 5.1)."""
    if not isinstance(value, dict):
        kind = "nothing" if value is None else type(value).__name__
        result = MetricResult(
            value=0.0, rating="blocker", blocker=True,
            reason=f"output must be a JSON object, got {kind}",
        )
        return None, result
    try:
        parsed = model_cls.model_validate(value, strict=True)
    except ValidationError as exc:
        problems = validation_problems(exc)
        more = f" (+{len(problems) - 6} more)" if len(problems) > 6 else ""
        return None, MetricResult(
            value=0.0, rating="blocker", blocker=True,
            reason="; ".join(problems[:6]) + more, details={"problems": problems},
        )
    ok = MetricResult(value=1.0, rating="good", reason="structure matches the task schema")
    return parsed, ok
