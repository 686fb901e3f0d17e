from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt
import pytest
from rapidfuzz import fuzz

from pytest_callqa.engine.matching import (
    MatchResult,
    greedy_match,
    match_exact,
    match_lists,
    prf,
    similarity_matrix,
)
from pytest_callqa.engine.text import normalize_loose, token_jaccard

_WORDS = [
    "refund", "Refund", "billing", "issue", "account", "management", "ROI", "analysis",
    "प्रिया", "शर्मा", "रिफंड", "3.5", "1,200", "the", "pricing", "negotiation", "", "!!",
]  # fmt: skip


def _random_strings(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choices(_WORDS, k=rng.randint(0, 4))) for _ in range(n)]


def _reference_greedy(
    sim: npt.NDArray[np.float64], threshold: float, strict: bool = False
) -> list[tuple[int, int, float]]:
    """The seed's algorithm, written plainly: repeatedly take the best free pair."""
    cells = sorted(
        ((float(sim[i, j]), i, j) for i in range(sim.shape[0]) for j in range(sim.shape[1])),
        key=lambda c: (-c[0], c[1], c[2]),
    )
    rows: set[int] = set()
    cols: set[int] = set()
    pairs = []
    for s, i, j in cells:
        accepted = s > threshold if strict else s >= threshold
        if accepted and i not in rows and j not in cols:
            rows.add(i)
            cols.add(j)
            pairs.append((i, j, s))
    return pairs


# --- similarity_matrix -----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["jaccard", "ratio", "token_set", "partial"])
@pytest.mark.parametrize(("n", "m"), [(0, 0), (0, 3), (2, 0)])
def test_empty_inputs_give_zero_size_matrices(method: str, n: int, m: int) -> None:
    sim = similarity_matrix(["x"] * n, ["y"] * m, method)  # type: ignore[arg-type]
    assert sim.shape == (n, m)
    assert sim.dtype == np.float64


def test_jaccard_matrix_seed_examples() -> None:
    sim = similarity_matrix(
        ["ROI justification", "pricing", "David Chen"],
        ["ROI analysis", "pricing negotiation", "David Chen"],
    )
    assert sim.shape == (3, 3)
    assert sim[0, 0] == pytest.approx(1 / 3)
    assert sim[1, 1] == pytest.approx(0.5)
    assert sim[2, 2] == 1.0
    assert sim[0, 2] == 0.0


def test_jaccard_matrix_agrees_with_token_jaccard() -> None:
    rng = random.Random(7)
    a, b = _random_strings(rng, 40), _random_strings(rng, 35)
    expected = np.array([[token_jaccard(x, y) for y in b] for x in a])
    np.testing.assert_allclose(similarity_matrix(a, b, "jaccard"), expected, rtol=0, atol=1e-12)


def test_jaccard_matrix_reads_an_unspaced_script_by_character_pairs() -> None:
    # One token per run, "退款延迟问题" and "退款延迟" shared nothing: 0.0, where "refund delay
    # issue" and "refund delay" are 2/3.
    sim = similarity_matrix(["退款延迟问题", "对价格的担忧", "refund delay issue"],
                            ["退款延迟", "价格担忧", "refund delay"])
    assert sim[0, 0] == pytest.approx(3 / 5)
    assert sim[1, 1] == pytest.approx(2 / 6)
    assert sim[2, 2] == pytest.approx(2 / 3)
    assert sim[0, 1] == 0.0


def test_a_word_less_item_matches_nothing() -> None:
    # "?" against "—" scored 1.0: two items with nothing in them counted as a match.
    np.testing.assert_array_equal(similarity_matrix(["", "!!", "?"], ["", "?", "—"]),
                                  np.zeros((3, 3)))
    np.testing.assert_array_equal(similarity_matrix(["", "a"], ["b", "", "a"]),
                                  [[0, 0, 0], [0, 0, 1]])
    assert match_lists(["?"], ["—"], threshold=0.5).pairs == []


@pytest.mark.parametrize(
    ("method", "scorer"),
    [("ratio", fuzz.ratio), ("token_set", fuzz.token_set_ratio), ("partial", fuzz.partial_ratio)],
)
def test_fuzzy_methods_match_rapidfuzz_on_normalised_strings(method: str, scorer: object) -> None:
    rng = random.Random(11)
    # 120 x 100 crosses the multi-threading cut-off, so both code paths are covered.
    for n, m in [(6, 5), (120, 100)]:
        a = [s for s in _random_strings(rng, 3 * n) if normalize_loose(s)][:n]
        b = [s for s in _random_strings(rng, 3 * m) if normalize_loose(s)][:m]
        sim = similarity_matrix(a, b, method)  # type: ignore[arg-type]
        expected = np.array(
            [[scorer(normalize_loose(x), normalize_loose(y)) / 100 for y in b] for x in a]  # type: ignore[operator]
        )
        np.testing.assert_allclose(sim, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("method", ["ratio", "token_set", "partial"])
def test_fuzzy_methods_use_the_word_less_item_rule(method: str) -> None:
    sim = similarity_matrix(["", "refund", "--"], ["", "refund", "?"], method)  # type: ignore[arg-type]
    np.testing.assert_array_equal(sim, [[0, 0, 0], [0, 1, 0], [0, 0, 0]])


def test_fuzzy_methods_ignore_case_and_punctuation() -> None:
    sim = similarity_matrix(["Account_Management!"], ["account management"], "ratio")
    assert sim[0, 0] == 1.0
    partial = similarity_matrix(["refund"], ["I want a refund now"], "partial")
    assert partial[0, 0] == 1.0


def test_unknown_method_is_rejected() -> None:
    with pytest.raises(ValueError, match="cosine"):
        similarity_matrix(["a"], ["b"], "cosine")  # type: ignore[arg-type]


# --- greedy_match ----------------------------------------------------------------------------


def test_greedy_takes_best_pair_first_not_the_optimal_assignment() -> None:
    sim = np.array([[0.9, 0.8], [0.85, 0.1]])
    assert greedy_match(sim, 0.0) == [(0, 0, 0.9), (1, 1, 0.1)]
    assert greedy_match(sim, 0.5) == [(0, 0, 0.9)]


def test_greedy_threshold_is_inclusive() -> None:
    sim = np.array([[0.5, 0.2], [0.3, 0.49]])
    assert greedy_match(sim, 0.5) == [(0, 0, 0.5)]
    assert greedy_match(sim, 0.51) == []


def test_strict_greedy_takes_only_pairs_above_the_threshold() -> None:
    sim = np.array([[0.5, 0.2], [0.3, 0.51]])
    assert greedy_match(sim, 0.5, strict=True) == [(1, 1, 0.51)]
    assert greedy_match(sim, 0.49, strict=True) == [(1, 1, 0.51), (0, 0, 0.5)]
    assert greedy_match(np.ones((2, 2)), 1.0, strict=True) == []


def test_greedy_ties_prefer_smaller_row_then_smaller_column() -> None:
    assert greedy_match(np.full((3, 3), 0.7), 0.5) == [(0, 0, 0.7), (1, 1, 0.7), (2, 2, 0.7)]
    sim = np.array([[0.2, 0.8, 0.8], [0.8, 0.8, 0.1]])
    assert greedy_match(sim, 0.5) == [(0, 1, 0.8), (1, 0, 0.8)]


def test_greedy_handles_rectangular_empty_and_nan() -> None:
    assert greedy_match(np.array([[0.1], [0.9], [0.5]]), 0.0) == [(1, 0, 0.9)]
    assert greedy_match(np.zeros((0, 4)), 0.0) == []
    assert greedy_match(np.array([[np.nan, 0.6]]), 0.0) == [(0, 1, 0.6)]


def test_greedy_returns_builtin_types() -> None:
    ((i, j, s),) = greedy_match(np.array([[0.75]], dtype=np.float32), 0.5)
    assert (type(i), type(j), type(s)) == (int, int, float)


def test_greedy_rejects_non_matrices() -> None:
    with pytest.raises(ValueError, match="2-D"):
        greedy_match(np.array([0.5, 0.6]), 0.5)


@pytest.mark.parametrize(
    ("seed", "shape", "levels", "threshold"),
    [
        (0, (9, 7), 3, 0.0),
        (1, (90, 70), 5, 0.25),
        # Tens of thousands of tied candidates: several sorting batches, ties across cuts.
        (2, (200, 150), 20, 0.0),
        (3, (150, 220), 20, 0.5),
        (4, (120, 130), 10_000, 0.1),
        (5, (100, 100), 1, 0.0),
    ],
)
@pytest.mark.parametrize("strict", [False, True])
def test_greedy_matches_reference(
    seed: int, shape: tuple[int, int], levels: int, threshold: float, strict: bool
) -> None:
    rng = np.random.default_rng(seed)
    sim = rng.integers(0, levels + 1, size=shape) / levels
    assert greedy_match(sim, threshold, strict=strict) == _reference_greedy(
        sim, threshold, strict)


def test_greedy_large_matrix_matches_every_row() -> None:
    rng = np.random.default_rng(3)
    sim = rng.random((1000, 1000))
    pairs = greedy_match(sim, 0.0)
    assert len(pairs) == 1000
    assert len({i for i, _, _ in pairs}) == len({j for _, j, _ in pairs}) == 1000
    assert pairs[0][2] == sim.max()
    assert [s for _, _, s in pairs] == sorted((s for _, _, s in pairs), reverse=True)


def test_greedy_needs_a_second_batch_when_the_best_cells_share_rows() -> None:
    # 100 x 100 = 10,000 candidates, more than one sorted batch (4,096): the best values all
    # sit in rows 0-49, so the first batch can match only those and rows 50-99 are matched
    # from what is left of the pool.
    rng = np.random.default_rng(5)
    sim = np.vstack([0.5 + rng.random((50, 100)) / 2, rng.random((50, 100)) / 2])
    pairs = greedy_match(sim, 0.0)
    assert len(pairs) == 100
    assert pairs == _reference_greedy(sim, 0.0)


# --- prf and list matching -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((0, 0, 0), (1.0, 1.0, 1.0)),
        ((0, 3, 0), (0.0, 0.0, 0.0)),
        ((0, 0, 3), (0.0, 0.0, 0.0)),
        ((0, 2, 2), (0.0, 0.0, 0.0)),
        ((2, 2, 2), (1.0, 1.0, 1.0)),
        ((1, 2, 4), (0.5, 0.25, 1 / 3)),
    ],
)
def test_prf_conventions(args: tuple[int, int, int], expected: tuple[float, float, float]) -> None:
    assert prf(*args) == pytest.approx(expected)


def test_match_lists_with_jaccard() -> None:
    result = match_lists(
        ["pricing", "ROI justification", "weather"],
        ["ROI analysis", "pricing negotiation"],
        threshold=0.3,
    )
    assert result.pairs == [(0, 1, 0.5), (1, 0, pytest.approx(1 / 3))]
    assert result.unmatched_predicted == [2]
    assert result.unmatched_expected == []
    assert result.precision == pytest.approx(2 / 3)
    assert result.recall == 1.0
    assert result.f1 == pytest.approx(0.8)


def test_match_lists_strict_rejects_the_seeds_pair_at_the_threshold() -> None:
    # Seed 002: Jaccard("pricing", "pricing negotiation") = 0.50, the topic threshold.
    assert match_lists(["pricing"], ["pricing negotiation"]).pairs == [(0, 0, 0.5)]
    strict = match_lists(["pricing"], ["pricing negotiation"], strict=True)
    assert strict.pairs == [] and strict.unmatched_expected == [0] and strict.f1 == 0.0


def test_match_lists_default_threshold_is_half() -> None:
    result = match_lists(["ROI justification"], ["ROI analysis"])
    assert result.pairs == []
    assert (result.precision, result.recall, result.f1) == (0.0, 0.0, 0.0)


def test_match_lists_other_method() -> None:
    result = match_lists(["refund request"], ["Refund-request!"], method="ratio", threshold=0.9)
    assert result.pairs == [(0, 0, 1.0)]
    # Character ratio sees the near-miss spelling that shares no whole token.
    typo = match_lists(["refnd"], ["refund"], method="ratio", threshold=0.8)
    assert [(i, j) for i, j, _ in typo.pairs] == [(0, 0)]
    assert match_lists(["refnd"], ["refund"], threshold=0.8).pairs == []


def test_match_lists_uses_given_similarity() -> None:
    sim = np.array([[0.1, 0.95], [0.9, 0.2]])
    result = match_lists(["a", "b"], ["c", "d"], threshold=0.8, sim=sim)
    assert result.pairs == [(0, 1, 0.95), (1, 0, 0.9)]
    assert result.f1 == 1.0


def test_match_lists_rejects_misshaped_similarity() -> None:
    with pytest.raises(ValueError, match=r"^similarity matrix has shape \(2, 1\), expected "
                                         r"\(1, 2\)$"):
        match_lists(["a"], ["b", "c"], sim=np.zeros((2, 1)))


def test_match_lists_with_empty_sides() -> None:
    assert match_lists([], []) == MatchResult([], [], [], 1.0, 1.0, 1.0)
    assert match_lists(["a", "b"], []) == MatchResult([], [0, 1], [], 0.0, 0.0, 0.0)
    assert match_lists([], ["a"]) == MatchResult([], [], [0], 0.0, 0.0, 0.0)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("threshold", [0.0, 1 / 3, 0.5, 1.0])
def test_match_lists_of_few_items_pairs_as_greedy_match_on_the_matrix(
        strict: bool, threshold: float) -> None:
    # Up to 2,500 cells the pairs are worked out without numpy: the same similarities,
    # ties and threshold, to the bit.
    rng = random.Random(11)
    for n, m in [(1, 1), (3, 5), (8, 8), (12, 4), (50, 50)]:
        a, b = _random_strings(rng, n), _random_strings(rng, m)
        pairs = greedy_match(similarity_matrix(a, b), threshold, strict=strict)
        found = match_lists(a, b, threshold=threshold, strict=strict).pairs
        assert [(i, j, s.hex()) for i, j, s in found] == [(i, j, s.hex()) for i, j, s in pairs]


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("threshold", [0.0, 0.4, 1.0, 1.5])
def test_match_lists_of_items_repeating_the_other_sides_pairs_as_greedy_match(
        strict: bool, threshold: float) -> None:
    # Pairs of the same words (1.0) are taken before the others are compared: duplicates,
    # reordered words and word-less items pair up as on the matrix all the same.
    rng = random.Random(5)
    for n in (1, 4, 9, 30):
        a = _random_strings(rng, n)
        b = [*a, *_random_strings(rng, rng.randint(0, 3)), *rng.sample(a, k=n // 2)]
        b = [" ".join(reversed(s.split())) if rng.random() < 0.3 else s for s in b]
        rng.shuffle(b)
        for left, right in ((a, b), (b, a)):
            pairs = greedy_match(similarity_matrix(left, right), threshold, strict=strict)
            found = match_lists(left, right, threshold=threshold, strict=strict).pairs
            assert ([(i, j, s.hex()) for i, j, s in found]
                    == [(i, j, s.hex()) for i, j, s in pairs])


def test_match_exact_normalises_and_matches_each_item_once() -> None:
    result = match_exact(
        ["Account_Management", "account management", "Billing", "refund"],
        ["account-management", "billing", "cancellation"],
    )
    assert result.pairs == [(0, 0, 1.0), (2, 1, 1.0)]
    assert result.unmatched_predicted == [1, 3]
    assert result.unmatched_expected == [2]
    assert result.precision == 0.5
    assert result.recall == pytest.approx(2 / 3)


def test_match_exact_duplicates_on_both_sides_pair_up_in_order() -> None:
    result = match_exact(["x", "X", "x"], ["x", "x"])
    assert result.pairs == [(0, 0, 1.0), (1, 1, 1.0)]
    assert result.unmatched_predicted == [2]


def test_match_exact_empty() -> None:
    assert match_exact([], []) == MatchResult([], [], [], 1.0, 1.0, 1.0)


def test_large_jaccard_matrices_count_shared_tokens_as_small_ones_do() -> None:
    """Past 2,500 pairs the shared tokens come from a sparse product instead of one set
    intersection per pair; the matrices must be identical."""
    from pytest_callqa.engine import matching

    words = ["refund", "order", "late", "card", "fee", "waived", "3.5", "1,200", ""]
    a = [" ".join(words[(i * k) % len(words)] for k in range(1, i % 5 + 2)) for i in range(60)]
    b = [" ".join(words[(i + k) % len(words)] for k in range(i % 4 + 1)) for i in range(50)]
    assert len(a) * len(b) > matching._SET_PRODUCT_MAX_CELLS
    large = similarity_matrix(a, b, "jaccard")
    small = np.vstack([similarity_matrix([x], b, "jaccard") for x in a])
    assert np.array_equal(large, small)
    assert (a[1], b[2]) == ("order late", "late card fee")
    assert large[1, 2] == 0.25  # "late" shared, four distinct tokens
    assert large[0, 0] == 1.0  # "refund" and "refund"


def test_large_jaccard_matrices_whose_sides_use_different_words() -> None:
    """The sparse product's two incidence matrices span the same vocabulary even when one
    side's words appear only on that side (a short side would not multiply)."""
    a = [f"refund {i}" for i in range(60)]
    b = [f"order w{i}" for i in range(50)]
    large = similarity_matrix(a, b, "jaccard")
    assert large.shape == (60, 50)
    assert not large.any()
    c = [*b[:49], "refund 7"]
    assert similarity_matrix(a, c, "jaccard")[7, 49] == 1.0
