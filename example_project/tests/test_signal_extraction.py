"""Signals extracted from sales and support calls, matched 1:1 against the annotated truth."""

import pytest

from pytest_callqa import assert_extraction_f1


@pytest.mark.callqa(task="extraction")
def test_signals_match_the_annotation(callqa_result):
    assert_extraction_f1(callqa_result, min_f1=0.70)


@pytest.mark.callqa(task="extraction")
def test_named_entities_are_near_exact(callqa_result):
    """Names, order ids and amounts must match closely (similarity threshold 0.8)."""
    assert_extraction_f1(callqa_result, min_f1=0.80, signal="entities")
