"""The judge's reply contract: the JSON schema a reply must follow (one verdict per metric
id, each score on its metric's scale), and the parsing that checks a reply against the items
it answers — what is usable, what is wrong with the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..core.context import parse_output
from ..core.judging import SCALE_RANGES, JudgeRequest, valid_score
from ..core.numbers import finite_number

SCORE_FORMATS: dict[str, str] = {
    "unit": "a number from 0.0 to 1.0 (continuous; 1.0 = fully correct)",
    "binary": "exactly 0 or 1 (1 = criterion met at or above its threshold, 0 = not met)",
    "ternary": "exactly 0, 0.5 or 1 (1 = matches, 0.5 = partly matches, 0 = does not match)",
    "likert5": "an integer from 1 to 5 (1 = worst, 5 = best)",
    "rubric0_5": "an integer from 0 to 5, as defined by the rubric in the instructions",
}


# Diagnostics a rubric may ask for (seed 001), kept even from a request that did not list
# them; every field a request lists in ``reply_fields`` is kept too. Other extra keys a model
# adds are ignored.
PASSED_ON_FIELDS = frozenset({"failure_code", "turns"})

_SCORE_SCHEMAS: dict[str, dict[str, Any]] = {
    "unit": {"type": "number", "minimum": 0, "maximum": 1},
    "binary": {"type": "integer", "enum": [0, 1]},
    "ternary": {"type": "number", "enum": [0, 0.5, 1]},
    "likert5": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
    "rubric0_5": {"type": "integer", "enum": [0, 1, 2, 3, 4, 5]},
}
_FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "code": {"type": ["string", "null"]},
    "turns": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    "count": {"type": "integer", "minimum": 0},
    **_SCORE_SCHEMAS,
}
_TEXT = {"type": "string"}


def verdict_fields(request: JudgeRequest) -> dict[str, Any]:
    """The fields of one verdict and their schemas: the score on the metric's scale, the
    reason, what the judge read in the output and (when the call shows it) in the truth, and
    every field the request lists."""
    fields: dict[str, Any] = {"score": _SCORE_SCHEMAS[request.scale]}
    if request.view.expected_outcome:
        fields["expected_outcome_reference"] = _TEXT
    fields["model_output_observed"] = _TEXT
    fields["reason"] = _TEXT
    for name, kind, _meaning in request.reply_fields:
        fields[name] = _FIELD_SCHEMAS[kind]
    return fields


def reply_schema(items: Sequence[Item]) -> dict[str, Any]:
    """The JSON Schema of a reply to ``items``: one required key per metric id, each a
    verdict whose score can only be a value of that metric's scale (strict-mode compatible:
    every property required, nothing else allowed)."""
    properties: dict[str, Any] = {}
    for item in items:
        verdict = verdict_fields(item.request)
        properties[item.ident] = {"type": "object", "properties": verdict,
                                  "required": list(verdict), "additionalProperties": False}
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def kept_fields(reply: JudgeReply, request: JudgeRequest) -> dict[str, Any]:
    """The extra fields of a verdict worth keeping: those the request lists and the rubric
    diagnostics, written at the top of the verdict or nested under ``details``."""
    wanted = {name for name, _kind, _meaning in request.reply_fields} | PASSED_ON_FIELDS
    extra = dict(reply.model_extra or {})
    nested = extra.pop("details", None)
    found = {k: v for k, v in nested.items() if k in wanted} if isinstance(nested, dict) else {}
    found.update({k: v for k, v in extra.items() if k in wanted})
    return found


class JudgeReply(BaseModel):
    """One verdict as the judge writes it; see :data:`PASSED_ON_FIELDS` for extra keys."""

    model_config = ConfigDict(extra="allow")

    metric: str | None = None
    # Checked by valid_score rather than typed, so "out of range" and "not a number" can be
    # told apart from a malformed reply.
    score: Any = None
    expected_outcome_reference: Any = ""
    model_output_observed: Any = ""
    reason: str


@dataclass(frozen=True)
class Item:
    """A request inside one judge call; ``ident`` is what the reply's ``metric`` must say."""

    ident: str
    request: JudgeRequest


@dataclass
class ParsedReply:
    replies: dict[str, JudgeReply] = field(default_factory=dict)
    problems: dict[str, list[str]] = field(default_factory=dict)
    general: list[str] = field(default_factory=list)
    # Numeric scores that were off their scale, by item: a family's own rule may use them.
    off_scale: dict[str, float] = field(default_factory=dict)

    def all_problems(self) -> list[str]:
        return self.general + [p for ps in self.problems.values() for p in ps]


def _scale_text(scale: str) -> str:
    low, high = SCALE_RANGES[scale]
    return f"{scale} ({low:g}–{high:g})"


def _is_number(value: Any) -> bool:
    return finite_number(value)


def _is_count(value: Any) -> bool:
    return finite_number(value) and value >= 0 and float(value).is_integer()


def _bad_counts(reply: JudgeReply, request: JudgeRequest) -> list[str]:
    """The counts ``request`` lists among its reply fields (how many facts the judge found
    supported, say) that ``reply`` does not give as whole numbers >= 0: a negative count
    made a hallucination rate of -300 % that rated "good"."""
    given = kept_fields(reply, request)
    return [name for name, kind, _meaning in request.reply_fields
            if kind == "count" and not _is_count(given.get(name))]


# Counts a verdict gives beside its score, as (part, the counts whose sum is the whole):
# its score is the part's share of the whole (1.0 of none). A score that contradicts them —
# 1.0 beside three facts of three unsupported — would pass what the counts fail: the
# hallucination rate, pooled from the counts, and the fabrication-free rate, the score,
# gave opposite verdicts and the blocker was not raised.
SHARES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("supported", ("supported", "unsupported")), ("relevant_used", ("referenced",)),
    ("relevant_used", ("needed",)), ("followed", ("instructions",)))
# How far a score may be from its counts' share: a judge rounds 2 of 3 to 0.7.
SHARE_TOLERANCE = 0.05
# Counts that sort every item a request lists in its focus, as (the counts, the focus key):
# they add up to how many items the call showed. One fact unsupported and none supported,
# of the ten listed, scored 0.0 agreed with itself, yet the fabrication-free rate read
# 0.0, the hallucination rate 1 of 10 and the pooled fabrication-free rate 9 of 10: three
# figures from one verdict.
PARTITIONS: tuple[tuple[tuple[str, ...], str], ...] = ((("supported", "unsupported"), "facts"),)


def listed_items(request: JudgeRequest, key: str) -> int | None:
    """How many items ``request``'s focus lists under ``key`` (None when it lists none
    there)."""
    listed = request.focus.get(key)
    return len(listed) if isinstance(listed, (list, tuple)) else None


def _contradicted(reply: JudgeReply, request: JudgeRequest) -> str | None:
    """How ``reply``'s score contradicts the scores or counts it gives beside it, or its
    counts the items its request lists (None when they agree, or it gives neither); its
    counts are whole numbers >= 0 (:func:`_bad_counts`) and its scores numbers
    (:func:`_missing_scores`)."""
    given = kept_fields(reply, request)
    scores = [given[name] for name, kind, _meaning in request.reply_fields
              if kind in _SCORE_SCHEMAS]
    # A verdict that scores several metrics at once (a conversation turn's three) is asked
    # for the lowest of them as its score. With one of them off the scale, that lowest is
    # ambiguous (0 as written, or the 1 the family scores it); the turn is garbled either
    # way, so nothing is hidden by not asking.
    if scores and all(valid_score(request.scale, v) for v in scores) \
            and float(reply.score) != min(scores):
        return f"score {reply.score} is not the lowest of its scores ({min(scores)})"
    counts = {name for name, kind, _meaning in request.reply_fields if kind == "count"}
    for sorted_into, key in PARTITIONS:
        listed = listed_items(request, key)
        if listed is None or not set(sorted_into) <= counts:
            continue
        total = sum(given[name] for name in sorted_into)
        if total != listed:
            return (f"{' + '.join(f'{name} {given[name]}' for name in sorted_into)} is "
                    f"{total}, not the {listed} {key} listed")
    for part, wholes in SHARES:
        if part not in counts or not set(wholes) <= counts:
            continue
        whole = sum(given[name] for name in wholes)
        if given[part] > whole:
            return f"{part} {given[part]} is more than {' + '.join(wholes)} ({whole})"
        share = given[part] / whole if whole else 1.0
        # The float difference of 0.8 and 3 of 4 is a hair over 0.05.
        if abs(float(reply.score) - share) > SHARE_TOLERANCE + 1e-9:
            return (f"score {reply.score} is not the share its counts give ({part} "
                    f"{given[part]} of {whole}: {share:.2f})")
    return None


def _lists_scores(request: JudgeRequest) -> bool:
    return any(kind in _SCORE_SCHEMAS for _name, kind, _meaning in request.reply_fields)


def _missing_scores(reply: JudgeReply, request: JudgeRequest) -> list[str]:
    """The scores ``request`` lists among its reply fields (a combined verdict's per-metric
    scores) that ``reply`` does not give as numbers: without one, the verdict says nothing
    on that metric. Whether a given number is on its scale is the family's to rule on."""
    given = kept_fields(reply, request)
    return [name for name, kind, _meaning in request.reply_fields
            if kind in _SCORE_SCHEMAS and not _is_number(given.get(name))]


def _reply_objects(value: Any, items: Sequence[Item]) -> tuple[list[Any], list[str]]:
    idents = {item.ident for item in items}
    if isinstance(value, dict) and value and set(value) <= idents \
            and all(isinstance(v, dict) for v in value.values()):
        # The asked-for shape: verdicts keyed by metric id.
        return [{**v, "metric": k} for k, v in value.items()], []
    if isinstance(value, dict) and "verdicts" in value:
        verdicts = value["verdicts"]
        if isinstance(verdicts, list):
            return verdicts, []
        if isinstance(verdicts, dict):
            # Some models key the verdicts by metric id instead of listing them.
            return [{"metric": k, **v} if isinstance(v, dict) else v
                    for k, v in verdicts.items()], []
        return [], ["'verdicts' must be a list of objects"]
    if isinstance(value, dict) and len(items) == 1:
        return [value], []
    if isinstance(value, list):
        return value, []
    kind = type(value).__name__
    wanted = "an object with one verdict per metric id, keyed by the id"
    return [], [f"the reply must be {wanted}, got {kind}"]


class _RepeatedKeys:
    """Finds the verdicts a reply gives a key of more than once: a metric id twice among
    verdicts keyed by id, or a field twice in one verdict. ``json.loads`` keeps the last value
    in silence, and the judge's first word may have been the one it meant."""

    def __init__(self, items: Sequence[Item]) -> None:
        self._idents = {item.ident for item in items}
        self._single = items[0].ident if len(items) == 1 else None
        self._found: set[str] = set()
        # The objects that repeat a key, by id (kept alive so that no id is reused).
        self._flagged: dict[int, dict[str, Any]] = {}

    def pairs_hook(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        holding = [key for key, value in pairs if self._holds_flagged(value)]
        # A verdict keyed by its id, with a key twice (in it, or deeper).
        self._found.update(key for key in holding if key in self._idents)
        if len(obj) < len(pairs) or holding:
            # An object holding one that repeats a key is flagged too, so the verdict a
            # repeated key sits deep in (its details, a list in them) is found.
            self._flagged[id(obj)] = obj
            keys = [key for key, _ in pairs]
            self._found.update(i for i in self._idents if keys.count(i) > 1)
            self._found.update(v for k, v in pairs if k == "metric" and isinstance(v, str)
                               and v in self._idents)
        return obj

    def _holds_flagged(self, value: Any) -> bool:
        """Whether ``value`` is a flagged object or a list holding one at any depth of
        lists (the objects in it were parsed, and flagged, before it)."""
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                if id(item) in self._flagged:
                    return True
            elif isinstance(item, list):
                stack.extend(item)
        return False

    def idents(self) -> set[str]:
        """The metric ids whose verdict, in the reply parsed with :meth:`pairs_hook`, cannot
        be trusted. With one metric asked for, any repeated key is its verdict's (a reply may
        name that metric differently, or give its verdict bare)."""
        if self._single is not None and self._flagged:
            return {self._single}
        return self._found


def parse_reply(content: str, items: Sequence[Item]) -> ParsedReply:
    """Validate a judge reply against the items it answers."""
    parsed = ParsedReply()
    repeated = _RepeatedKeys(items)
    value, problem, _notes = parse_output(content, repeated.pairs_hook)
    if problem is not None:
        parsed.general.append(f"the reply is not valid JSON: {problem}")
        return parsed
    for twice in sorted(repeated.idents()):
        parsed.problems[twice] = [f"the reply repeats a key of the verdict for metric {twice!r}, "
                                  "so which value it meant is unknown"]
    objects, general = _reply_objects(value, items)
    parsed.general.extend(general)
    by_ident = {item.ident: item for item in items}
    single = items[0] if len(items) == 1 else None
    for obj in objects:
        try:
            reply = JudgeReply.model_validate(obj)
        except ValidationError as exc:
            where = obj.get("metric") if isinstance(obj, dict) else None
            fields = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'verdict'}: {e['msg']}" for e in exc.errors()
            )
            target = where if isinstance(where, str) and where in by_ident else None
            if target is None and single is not None:
                target = single.ident
            message = f"malformed verdict ({fields})"
            if target is None:
                parsed.general.append(message)
            else:
                parsed.problems.setdefault(target, []).append(message)
            continue
        # With one metric asked for, a reply that names it differently (a display name,
        # a typo) still answers it.
        ident = single.ident if single is not None else reply.metric
        if ident not in by_ident:
            parsed.general.append(f"verdict for unknown metric {reply.metric!r}")
            continue
        if ident in parsed.replies:
            parsed.problems.setdefault(ident, []).append(f"two verdicts for metric {ident!r}")
            continue
        request = by_ident[ident].request
        problems = []
        missing = _missing_scores(reply, request)
        # A verdict that gives every score its request lists (a combined conversation
        # verdict's three) gives as its own score only the lowest of them: a number off
        # the scale there is checked against them (_contradicted), never taken for theirs.
        # Taken for theirs, 0 beside 5, 5, 5 scored all three 1.
        derived = _lists_scores(request) and not missing and _is_number(reply.score)
        if not derived and not valid_score(request.scale, reply.score):
            if _is_number(reply.score):
                parsed.off_scale[ident] = float(reply.score)
            problems.append(
                f"score {reply.score!r} for metric {ident!r} is not valid on the "
                f"{_scale_text(request.scale)} scale: expected {SCORE_FORMATS[request.scale]}"
            )
        if missing:
            problems.append(f"the verdict for metric {ident!r} gives no number for "
                            f"{', '.join(missing)}, which the metric asks for")
        uncounted = _bad_counts(reply, request)
        if uncounted:
            problems.append(f"the verdict for metric {ident!r} gives no whole count >= 0 for "
                            f"{', '.join(uncounted)}, which the metric asks for")
        elif not problems and (contradiction := _contradicted(reply, request)):
            problems.append(f"the verdict for metric {ident!r} contradicts itself: "
                            f"{contradiction}")
        if problems:
            parsed.problems.setdefault(ident, []).extend(problems)
            continue
        parsed.replies[ident] = reply
    for ident in parsed.problems:
        # Two verdicts for one metric: neither is trusted.
        parsed.replies.pop(ident, None)
    for item in items:
        if item.ident not in parsed.replies and item.ident not in parsed.problems:
            parsed.problems[item.ident] = [f"no verdict for metric {item.ident!r}"]
    return parsed
