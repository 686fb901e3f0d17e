"""A built-in family's validated truth of a case is kept while the case lives, and only then."""

from __future__ import annotations

import gc
import weakref

from pytest_callqa.engine import evaluate as ev
from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.memo import ByIdentity
from pytest_callqa.engine.registry import default_registry


def _case(case_id: str) -> GoldenCase:
    truth = {"sentiment": [{"sentence_id": 1, "text": "Hi.", "label": "neutral"}],
             "summary": {"call_purpose": "greet", "highlights": [], "call_extracted_info": {}},
             "emotion": {}}
    return GoldenCase(id=case_id, task="text", transcript="agent: Hi.", expected_outcome=truth)


def test_a_case_is_validated_once_while_it_lives_and_forgotten_when_it_goes() -> None:
    spec = default_registry().task("text")
    case = _case("kept-1")
    first = ev._builtin_case_models(ByIdentity(spec), ByIdentity(case))
    again = ev._builtin_case_models(ByIdentity(spec), ByIdentity(case))
    assert again is first
    key = id(case)
    assert ev._VALIDATED[key][2] is first
    del case, first, again
    gc.collect()
    assert key not in ev._VALIDATED


def test_a_gone_cases_call_back_leaves_a_newer_entry_under_its_id() -> None:
    case = _case("kept-2")
    newer = (weakref.ref(case), object(), (None, None))
    ev._VALIDATED[12345] = newer  # type: ignore[assignment]
    try:
        ev._forget(12345, weakref.ref(_case("other")))
        assert ev._VALIDATED[12345] is newer
        ev._forget(12345, newer[0])
        assert 12345 not in ev._VALIDATED
    finally:
        ev._VALIDATED.pop(12345, None)


def test_past_the_limit_the_oldest_case_is_dropped(monkeypatch) -> None:
    monkeypatch.setattr(ev, "_VALIDATED", {})
    monkeypatch.setattr(ev, "VALIDATED_LIMIT", 2)
    spec = default_registry().task("text")
    cases = [_case(f"limit-{i}") for i in range(3)]
    for case in cases[:2]:
        ev._builtin_case_models(ByIdentity(spec), ByIdentity(case))
    assert list(ev._VALIDATED) == [id(cases[0]), id(cases[1])]
    ev._builtin_case_models(ByIdentity(spec), ByIdentity(cases[2]))
    assert list(ev._VALIDATED) == [id(cases[1]), id(cases[2])]
