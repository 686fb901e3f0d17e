"""What the offline judge reads of a case's expected outcome as support for a statement:
the facts it states, not its ids, labels, scores or emotion values."""

from __future__ import annotations

from typing import Any

from ..core.cases import GoldenCase
from ..core.judging import JudgeRequest
from ..core.memo import ByIdentity, batch_memoised


def _flatten(value: Any, into: list[str]) -> list[str]:
    """``into`` with the texts of ``value`` appended, depth first (no generator per level)."""
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, into)
            if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                into.append(f"{key} {item}")
    elif isinstance(value, (list, tuple)):
        for item in value:
            _flatten(item, into)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        into.append(str(value))
    return into


# Where the expected outcome of each task the support checks are asked for states facts:
# texts, and the extracted values with their keys. Ids, labels, scores and emotion values
# state none: a made-up "10% discount" was supported by the truth's joy of 10, and
# "called 3 times" by a sentence_id 3.
_STATED: dict[str, tuple[tuple[str, ...], ...]] = {
    "qa": (("questions", "*", "reason"),),
    "entity": (("detected_keywords",), ("detected_topics",), ("valid_entity_set",)),
    "text": (("sentiment", "*", "text"), ("summary", "call_purpose"),
             ("summary", "highlights"), ("summary", "call_extracted_info")),
    "translation": (("full_translation",), ("sentence_translations", "*", "source_text"),
                    ("sentence_translations", "*", "translated_text"),
                    ("domain_terms_handled", "*", "term"),
                    ("domain_terms_handled", "*", "handled_as"),
                    ("named_entities_handled", "*", "entity"),
                    ("named_entities_handled", "*", "handled_as")),
}


def _reached(value: Any, path: tuple[str, ...]) -> list[Any]:
    """The values at ``path`` in ``value`` ("*" is every item of a list)."""
    if not path:
        return [value]
    head, rest = path[0], path[1:]
    if head == "*":
        items = value if isinstance(value, list) else []
        return [found for item in items for found in _reached(item, rest)]
    if isinstance(value, dict) and head in value:
        return _reached(value[head], rest)
    return []


def truth_text(request: JudgeRequest) -> str:
    """The facts the expected outcome states, as plain text, for support checks."""
    return _truth_text(ByIdentity(request.case))


@batch_memoised
def _truth_text(case: ByIdentity[GoldenCase]) -> str:
    # Every output of a case has its statements checked against the same truth.
    expected = case.value.expected_outcome
    paths = _STATED.get(case.value.task)
    if paths is None:
        # A task of its own states its facts where it likes: all of its truth is read.
        return "\n".join(_flatten(expected, []))
    stated: list[str] = []
    for path in paths:
        for value in _reached(expected, path):
            _flatten(value, stated)
    return "\n".join(stated)
