"""All-pairs string similarity and greedy one-to-one matching of predicted to expected items.

Matrices are computed in one vectorised pass (rapidfuzz ``cdist`` or a sparse token
product) so a 1,000 x 1,000 comparison stays well under a second.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from rapidfuzz import fuzz, process

from .core.memo import batch_memoised
from .text import normalize, normalize_loose, units

Method = Literal["jaccard", "ratio", "token_set", "partial"]

FloatMatrix = npt.NDArray[np.float64]

_SCORERS: dict[str, Callable[..., float]] = {
    "ratio": fuzz.ratio,
    "token_set": fuzz.token_set_ratio,
    "partial": fuzz.partial_ratio,
}
# Below this many cells, starting worker threads costs more than it saves.
_PARALLEL_MIN_CELLS = 10_000
# Up to this many pairs, token sets are intersected one pair at a time.
_SET_PRODUCT_MAX_CELLS = 2500
# Smallest number of candidates sorted at once by greedy_match.
_GREEDY_BATCH = 4096


@batch_memoised
def _token_set(doc: str) -> frozenset[str]:
    # A run of a script written without spaces is one token however many words it holds:
    # "价格担忧" and "对价格的担忧" would share none. Its character pairs are compared instead.
    return frozenset(units(doc))


def _jaccard_matrix(a: Sequence[str], b: Sequence[str]) -> FloatMatrix:
    sets_a = [_token_set(d) for d in a]
    sets_b = [_token_set(d) for d in b]
    sizes_a = np.array([len(s) for s in sets_a], dtype=np.float64)
    sizes_b = np.array([len(s) for s in sets_b], dtype=np.float64)
    inter: FloatMatrix
    if len(a) * len(b) <= _SET_PRODUCT_MAX_CELLS:
        inter = np.array([[len(x & y) for y in sets_b] for x in sets_a],
                         dtype=np.float64).reshape(len(a), len(b))
    else:
        inter = _shared_counts(sets_a, sets_b)
    union = sizes_a[:, None] + sizes_b[None, :] - inter
    # An empty union means neither item has a word ("?", "—"): there is nothing to match,
    # and two such items that matched at 1.0 counted as a correct extraction.
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def _shared_counts(sets_a: Sequence[frozenset[str]],
                   sets_b: Sequence[frozenset[str]]) -> FloatMatrix:
    """Tokens each pair shares, as the product of two sparse incidence matrices (exact:
    the counts are small integers)."""
    # scipy (a dependency of scikit-learn) loads only for large all-pairs comparisons.
    from scipy import sparse

    ids: dict[str, int] = {}
    for token_set in (*sets_a, *sets_b):
        for token in token_set:
            ids.setdefault(token, len(ids))

    def incidence(sets: Sequence[frozenset[str]]) -> Any:
        indices = np.fromiter((ids[t] for s in sets for t in s), dtype=np.intp)
        indptr = np.cumsum([0, *(len(s) for s in sets)])
        return sparse.csr_array((np.ones(len(indices)), indices, indptr),
                                shape=(len(sets), len(ids)))

    left, right = incidence(sets_a), incidence(sets_b)
    return np.asarray((left @ right.T).toarray(), dtype=np.float64)


def _fuzz_matrix(a: Sequence[str], b: Sequence[str], method: str) -> FloatMatrix:
    na = [normalize_loose(s) for s in a]
    nb = [normalize_loose(s) for s in b]
    workers = -1 if len(na) * len(nb) >= _PARALLEL_MIN_CELLS else 1
    scores = process.cdist(
        na, nb, scorer=_SCORERS[method], processor=None, dtype=np.float64, workers=workers
    )
    sim: FloatMatrix = np.asarray(scores, dtype=np.float64) / 100.0
    # rapidfuzz disagrees with itself on empty strings (ratio("", "") is 100, token_set 0);
    # a word-less item matches nothing for every method, as for Jaccard.
    sim[[not s for s in na], :] = 0.0
    sim[:, [not s for s in nb]] = 0.0
    return sim


def similarity_matrix(
    a: Sequence[str], b: Sequence[str], method: Method = "jaccard"
) -> FloatMatrix:
    """Similarity in [0, 1] of every ``a[i]`` to every ``b[j]``, shape ``(len(a), len(b))``.

    An item without a word (empty, or punctuation only: "?", "—") matches nothing (0.0), another
    such item included, whatever the method.
    """
    if method not in ("jaccard", *_SCORERS):
        raise ValueError(f"unknown similarity method {method!r}")
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)), dtype=np.float64)
    if method == "jaccard":
        return _jaccard_matrix(a, b)
    return _fuzz_matrix(a, b, method)


def greedy_match(
    sim: npt.NDArray[Any], threshold: float, *, strict: bool = False
) -> list[tuple[int, int, float]]:
    """Pairs ``(row, col, similarity)`` taken best first, each row and column at most once.

    Only pairs with similarity >= ``threshold`` are taken, or with ``strict`` only those
    strictly above it. Equal similarities go to the smaller row, then the smaller column, so
    the result does not depend on sort internals.
    """
    matrix = np.asarray(sim, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"similarity matrix must be 2-D, got shape {matrix.shape}")
    accepted = matrix > threshold if strict else matrix >= threshold
    rows, cols = np.nonzero(accepted)
    values = matrix[rows, cols]
    row_used = np.zeros(matrix.shape[0], dtype=bool)
    col_used = np.zeros(matrix.shape[1], dtype=bool)
    limit = min(matrix.shape)
    batch = max(_GREEDY_BATCH, 4 * limit)
    pairs: list[tuple[int, int, float]] = []
    # Sorting every candidate dominates on dense matrices, yet a matched row or column
    # retires a whole line of them. So the best ``batch`` candidates are sorted and walked,
    # then the pool is purged of retired candidates before the next batch is picked.
    while values.size and len(pairs) < limit:
        if values.size > batch:
            cut = np.partition(values, values.size - batch)[values.size - batch]
            # Ties with the cut stay in this batch so their row/column order is kept.
            take = values >= cut
        else:
            take = np.ones(values.size, dtype=bool)
        r, c, v = rows[take], cols[take], values[take]
        order = np.lexsort((c, r, -v))
        for i, j, s in zip(r[order].tolist(), c[order].tolist(), v[order].tolist(), strict=True):
            if row_used[i] or col_used[j]:
                continue
            row_used[i] = col_used[j] = True
            pairs.append((i, j, s))
            if len(pairs) == limit:
                return pairs
        rest = ~take
        rows, cols, values = rows[rest], cols[rest], values[rest]
        alive = ~(row_used[rows] | col_used[cols])
        rows, cols, values = rows[alive], cols[alive], values[alive]
    return pairs


def prf(true_positives: int, n_predicted: int, n_expected: int) -> tuple[float, float, float]:
    """Precision, recall and F1; predicting nothing when nothing is expected is perfect."""
    if n_predicted == 0 and n_expected == 0:
        return 1.0, 1.0, 1.0
    precision = true_positives / n_predicted if n_predicted else 0.0
    recall = true_positives / n_expected if n_expected else 0.0
    total = precision + recall
    f1 = 2 * precision * recall / total if total > 0 else 0.0
    return precision, recall, f1


@dataclass(frozen=True)
class MatchResult:
    pairs: list[tuple[int, int, float]]
    unmatched_predicted: list[int]
    unmatched_expected: list[int]
    precision: float
    recall: float
    f1: float


def _result(pairs: list[tuple[int, int, float]], n_predicted: int, n_expected: int) -> MatchResult:
    matched_p = {i for i, _, _ in pairs}
    matched_e = {j for _, j, _ in pairs}
    precision, recall, f1 = prf(len(pairs), n_predicted, n_expected)
    return MatchResult(
        pairs=pairs,
        unmatched_predicted=[i for i in range(n_predicted) if i not in matched_p],
        unmatched_expected=[j for j in range(n_expected) if j not in matched_e],
        precision=precision,
        recall=recall,
        f1=f1,
    )


def match_lists(
    predicted: Sequence[str],
    expected: Sequence[str],
    *,
    method: Method = "jaccard",
    threshold: float = 0.5,
    strict: bool = False,
    sim: npt.NDArray[Any] | None = None,
) -> MatchResult:
    """Greedy 1:1 match of ``predicted`` to ``expected``, scored by precision/recall/F1.

    A pair at exactly ``threshold`` is accepted unless ``strict`` (see ``greedy_match``).
    ``sim`` replaces the string similarity, e.g. with embedding cosines computed elsewhere;
    it must have shape ``(len(predicted), len(expected))``.
    """
    shape = (len(predicted), len(expected))
    if sim is None and method == "jaccard" and shape[0] * shape[1] <= _SET_PRODUCT_MAX_CELLS:
        return _result(_small_jaccard_match(predicted, expected, threshold, strict), *shape)
    if sim is None:
        sim = similarity_matrix(predicted, expected, method)
    elif np.shape(sim) != shape:
        raise ValueError(f"similarity matrix has shape {np.shape(sim)}, expected {shape}")
    return _result(greedy_match(sim, threshold, strict=strict), *shape)


def _small_jaccard_match(predicted: Sequence[str], expected: Sequence[str], threshold: float,
                         strict: bool) -> list[tuple[int, int, float]]:
    """``greedy_match`` of the Jaccard ``similarity_matrix`` of a few items, worked out
    without numpy, whose per-call cost is most of the work at this size: the same
    similarities (exact integer counts, one correctly rounded division) taken in the same
    order."""
    if not (threshold < 1.0 if strict else threshold <= 1.0):
        return []  # no similarity is above 1.0
    sets_p = [_token_set(d) for d in predicted]
    sets_e = [_token_set(d) for d in expected]
    limit = min(len(sets_p), len(sets_e))
    pairs: list[tuple[int, int, float]] = []
    cols_used: set[int] = set()
    rows_left: Sequence[int] = range(len(sets_p))
    if not set(sets_p).isdisjoint(sets_e):
        # 1.0, the best similarity, is only a pair's of the same words (fewer shared than
        # in the union is below 1.0 however rounded), and greedy takes those pairs first,
        # row by row, each row's smallest free column. They are found by hashing the word
        # sets, not by comparing every pair: an output often repeats the truth's items.
        same: dict[frozenset[str], list[int]] = {}
        for j, y in enumerate(sets_e):
            if y:  # a word-less pair is 0.0
                same.setdefault(y, []).append(j)
        rows_left = []
        for i, x in enumerate(sets_p):
            for j in same.get(x, ()):
                if j not in cols_used:
                    cols_used.add(j)
                    pairs.append((i, j, 1.0))
                    break
            else:
                rows_left.append(i)
        if len(pairs) == limit:
            return pairs
    # The other pairs of free rows and columns, below 1.0, best first as in greedy_match.
    cols_left = [(j, y, len(y)) for j, y in enumerate(sets_e) if j not in cols_used]
    candidates = []
    for i in rows_left:
        x = sets_p[i]
        size = len(x)
        for j, y, y_size in cols_left:
            # Most pairs share no word: 0.0 (as a word-less pair's, whose union is empty),
            # without building their intersection.
            if x.isdisjoint(y):
                similarity = 0.0
            else:
                shared = len(x & y)
                similarity = shared / (size + y_size - shared)
            if similarity > threshold if strict else similarity >= threshold:
                candidates.append((-similarity, i, j))
    candidates.sort()
    rows_used: set[int] = set()
    for negated, i, j in candidates:
        if i in rows_used or j in cols_used:
            continue
        rows_used.add(i)
        cols_used.add(j)
        pairs.append((i, j, -negated))
        if len(pairs) == limit:
            break
    return pairs


def match_exact(predicted: Sequence[str], expected: Sequence[str]) -> MatchResult:
    """1:1 match on ``normalize`` equality; each expected item absorbs one prediction."""
    waiting: defaultdict[str, deque[int]] = defaultdict(deque)
    for j, item in enumerate(expected):
        waiting[normalize(item)].append(j)
    pairs: list[tuple[int, int, float]] = []
    for i, item in enumerate(predicted):
        slots = waiting.get(normalize(item))
        if slots:
            pairs.append((i, slots.popleft(), 1.0))
    return _result(pairs, len(predicted), len(expected))
