"""Statistics over cases and runs: bootstrap intervals, pass^k and pass@k, mean and standard
deviation.

A 95 % bootstrap interval says how far a figure computed over a handful of golden cases
could move with another handful like them: cases are drawn with replacement, the figure is
recomputed for every draw, and the interval holds the middle 95 % of what came out. Small
case sets (up to :data:`EXACT_MAX_CASES`) get the exact bootstrap distribution, every
resample weighted by how likely it is; larger ones :data:`RESAMPLES` draws from a generator
with a fixed seed, so the same results always give the same interval.

An interval is a function of its figures alone, so within :func:`remembered` an
:class:`IntervalMemo` answers the ones it holds: a scorecard built again from the same
results (a re-run answered from the judge cache) gets its intervals without resampling, and
without loading numpy, which loads only when an interval is drawn.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from math import comb
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # numpy loads only to draw an interval (the memo answers the others).
    import numpy as np

LEVEL = 0.95
RESAMPLES = 2000
SEED = 20261123
# The exact distribution of a mean over n cases has at most C(2n-1, n) points (6435 for 8).
EXACT_MAX_CASES = 8
# Sums equal to this many decimals are one point of the exact distribution.
_DECIMALS = 12
# Resample indices drawn and reduced at most this many at a time: all 2,000 resamples at once
# over 33,000 cases would hold two 2,000 x 33,000 arrays (1 GB). The generator's stream is the
# same however its draws are split, and each resample is reduced on its own, so the figures
# are too.
_BLOCK = 2_000_000
# The most a kept draw may hold (see seeded_blocks): 2,000 resamples of up to ~8,000 cases as
# 16-bit indices.
_KEPT_BYTES = 32 * 2**20

Interval = tuple[float, float]


class IntervalMemo:
    """Bootstrap intervals by a digest of everything they are computed from: the kind of
    interval, its figures in order, the level, the seed and the resampling constants.
    ``found`` holds what an earlier build stored; ``kept`` every interval this build used,
    looked up or drawn, which is what the next build will want."""

    def __init__(self, found: Mapping[str, Interval | None] | None = None) -> None:
        self.found: dict[str, Interval | None] = dict(found or {})
        self.kept: dict[str, Interval | None] = {}
        self.drawn = 0

    def interval(self, kind: str, data: object,
                 draw: Callable[[], Interval | None]) -> Interval | None:
        key = _digest(kind, data)
        if key in self.kept:
            return self.kept[key]
        if key in self.found:
            found = self.found[key]
        else:
            found = draw()
            self.drawn += 1
        self.kept[key] = found
        return found


class _KeptDraws:
    """The resample indices last drawn from a freshly seeded generator, for the next figure
    over as many cases (a task's metrics and its score usually are): the generator would
    draw the very same indices again. One set, and only one that fits in
    :data:`_KEPT_BYTES`."""

    def __init__(self) -> None:
        self.key: tuple[int, int, int] | None = None
        self.blocks: list[np.ndarray] = []


_MEMO: ContextVar[IntervalMemo | None] = ContextVar("callqa_interval_memo", default=None)
_DRAWS: ContextVar[_KeptDraws | None] = ContextVar("callqa_kept_draws", default=None)


@contextlib.contextmanager
def remembered(memo: IntervalMemo | None) -> Iterator[IntervalMemo | None]:
    """Within the block, the bootstrap functions answer from (and add to) ``memo``, and
    figures over as many cases share their draws (:func:`seeded_blocks`)."""
    token = _MEMO.set(memo)
    draws = _DRAWS.set(_KeptDraws())
    try:
        yield memo
    finally:
        _DRAWS.reset(draws)
        _MEMO.reset(token)


def _digest(kind: str, data: object) -> str:
    # Floats are written as their shortest round-tripping text: equal figures, equal key.
    text = json.dumps([kind, data, RESAMPLES, EXACT_MAX_CASES, _DECIMALS],
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _through_memo(kind: str, data: object,
                  draw: Callable[[], Interval | None]) -> Interval | None:
    memo = _MEMO.get()
    return draw() if memo is None else memo.interval(kind, data, draw)


def _quantile(points: Sequence[tuple[float, float]], q: float) -> float:
    """The smallest value whose cumulative probability reaches ``q`` (the inverse of the
    distribution function; ``points`` are (value, probability) in ascending order)."""
    total = 0.0
    for value, weight in points:
        total += weight
        if total >= q - 1e-12:
            return value
    return points[-1][0]


def _exact_mean_distribution(values: Sequence[float]) -> list[tuple[float, float]]:
    """Every possible mean of n draws with replacement from ``values``, with its
    probability: the n-fold convolution of the empirical distribution."""
    n = len(values)
    step: dict[float, float] = {}
    for v in values:
        step[v] = step.get(v, 0.0) + 1.0 / n
    sums = {0.0: 1.0}
    for _ in range(n):
        grown: dict[float, float] = {}
        for total, p in sums.items():
            for v, q in step.items():
                key = round(total + v, _DECIMALS)
                grown[key] = grown.get(key, 0.0) + p * q
        sums = grown
    return sorted((round(total / n, _DECIMALS), p) for total, p in sums.items())


def varies(values: Iterable[float]) -> bool:
    """Whether ``values`` hold two that differ (at the exact distribution's precision).
    Resampling values that do not gives the one value back every time: a zero-width
    interval that estimates nothing, be there one case or six alike."""
    return len({round(v, _DECIMALS) for v in values}) > 1


def bootstrap_mean(values: Sequence[float], *, level: float = LEVEL,
                   seed: int = SEED) -> Interval | None:
    """The bootstrap interval of the mean of ``values``; None unless two of them differ
    (:func:`varies`: one value, or six alike, show no spread to resample)."""
    clean = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not varies(clean):
        return None
    return _through_memo("mean", [clean, float(level), int(seed)],
                         lambda: _bootstrap_mean(clean, level, seed))


def _bootstrap_mean(clean: list[float], level: float, seed: int) -> Interval | None:
    tail = (1.0 - level) / 2
    if len(clean) <= EXACT_MAX_CASES:
        points = _exact_mean_distribution(clean)
        return _quantile(points, tail), _quantile(points, 1.0 - tail)
    # numpy loads only to draw an interval (the memo answers the others).
    import numpy as np

    data = np.asarray(clean)
    return _sample_interval(block_means(data, seeded_blocks(seed, len(data))), tail)


def resample_blocks(rng: np.random.Generator, n: int,
                    resamples: int = RESAMPLES) -> Iterator[np.ndarray]:
    """``resamples`` draws of n case indices with replacement, a block of rows at a time
    (one block in memory; a small case set is one block)."""
    rows = max(1, _BLOCK // n)
    for start in range(0, resamples, rows):
        yield rng.integers(0, n, size=(min(rows, resamples - start), n))


def seeded_blocks(seed: int, n: int, resamples: int = RESAMPLES) -> Iterable[np.ndarray]:
    """:func:`resample_blocks` from a generator seeded with ``seed``. Within
    :func:`remembered`, the draw is kept (read-only, as the narrowest unsigned integers that
    hold its indices: the same indices in a quarter of the memory, or less) when it fits in
    :data:`_KEPT_BYTES`, and given again to the next figure over as many cases with the same
    seed: drawing the indices takes two to three times as long as reducing them."""
    # numpy loads only to draw an interval (the memo answers the others).
    import numpy as np

    kept = _DRAWS.get()
    key = (n, resamples, seed)
    if kept is not None and kept.key == key:
        return kept.blocks
    blocks = resample_blocks(np.random.default_rng(seed), n, resamples)
    narrow = np.uint16 if n <= 2**16 else np.uint32
    if kept is None or n * resamples * np.dtype(narrow).itemsize > _KEPT_BYTES:
        return blocks
    kept.key, kept.blocks = None, []
    for block in blocks:
        compact = block.astype(narrow)
        compact.setflags(write=False)
        kept.blocks.append(compact)
    kept.key = key
    return kept.blocks


def resampled_means(rng: np.random.Generator, data: np.ndarray,
                    resamples: int = RESAMPLES) -> np.ndarray:
    """The mean of ``data`` in each of ``resamples`` draws (:func:`resample_blocks`)."""
    return block_means(data, resample_blocks(rng, len(data), resamples))


def block_means(data: np.ndarray, blocks: Iterable[np.ndarray]) -> np.ndarray:
    """The mean of ``data`` over each row of case indices in ``blocks``, in order."""
    # numpy loads only to draw an interval (the memo answers the others).
    import numpy as np

    return np.concatenate([data[picks].mean(axis=1) for picks in blocks])


def bootstrap_ratio(numerators: Sequence[float], denominators: Sequence[float], *,
                    level: float = LEVEL, seed: int = SEED) -> Interval | None:
    """The bootstrap interval of sum(numerators) / sum(denominators) over cases (a pooled
    rate); a resample whose denominators sum to 0 has no rate and is left out. A case with
    no units (denominator 0) adds nothing to the rate and is left out of the resampling too:
    None unless two cases that carry units differ in their rate (see :func:`bootstrap_mean`
    — one case, or cases of one rate, would give that rate back every time, a zero-width
    interval that estimates nothing)."""
    if len(numerators) != len(denominators):
        return None
    carried = [(float(n), float(d)) for n, d in zip(numerators, denominators, strict=True)
               if d]
    if not varies(n / d for n, d in carried):
        return None
    nums, dens = [n for n, _ in carried], [d for _, d in carried]
    return _through_memo("ratio", [nums, dens, float(level), int(seed)],
                         lambda: _bootstrap_ratio(nums, dens, level, seed))


def _bootstrap_ratio(numerators: list[float], denominators: list[float], level: float,
                     seed: int) -> Interval | None:
    # numpy loads only to draw an interval (the memo answers the others).
    import numpy as np

    num, den = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    den_sums, num_sums = [], []
    for picks in seeded_blocks(seed, len(num)):
        den_sums.append(den[picks].sum(axis=1))
        num_sums.append(num[picks].sum(axis=1))
    sums = np.concatenate(den_sums)
    kept = sums > 0
    rates = np.concatenate(num_sums)[kept] / sums[kept]
    return _sample_interval(rates, (1.0 - level) / 2)


def bootstrap_weighted(groups: Sequence[tuple[Sequence[float], float]], *,
                       fixed: Sequence[tuple[float, float]] = (), level: float = LEVEL,
                       seed: int = SEED) -> Interval | None:
    """The interval of a weighted mean of group means (a final score over task scores): each
    group's cases are resampled on their own; ``fixed`` (value, weight) parts are held
    constant. Groups without a value are left out, as the point estimate leaves them. None
    when any group left has a single value: every resample of it is that value, so its
    share of the weight would be held as if known exactly (see :func:`bootstrap_mean`); and
    None when no group varies (:func:`varies`), a zero-width interval that estimates
    nothing. A group of several cases all alike is resampled with the others: its cases
    did not differ, which is evidence, and one such task among others that vary left a
    strong model without an interval, tied with every other."""
    kept = [([float(v) for v in values], float(w)) for values, w in groups if values]
    if (not kept or any(len(values) < 2 for values, _ in kept)
            or not any(varies(values) for values, _ in kept)):
        return None
    held = [(float(v), float(w)) for v, w in fixed]
    return _through_memo("weighted", [kept, held, float(level), int(seed)],
                         lambda: _bootstrap_weighted(kept, held, level, seed))


def _bootstrap_weighted(kept: list[tuple[list[float], float]],
                        fixed: list[tuple[float, float]], level: float,
                        seed: int) -> Interval | None:
    # numpy loads only to draw an interval (the memo answers the others).
    import numpy as np

    rng = np.random.default_rng(seed)
    total_weight = sum(w for _, w in kept) + sum(w for _, w in fixed)
    combined = np.full(RESAMPLES, float(sum(v * w for v, w in fixed)))
    for values, weight in kept:
        combined += resampled_means(rng, np.asarray(values)) * weight
    return _sample_interval(combined / total_weight, (1.0 - level) / 2)


def _sample_interval(samples: np.ndarray, tail: float) -> Interval | None:
    # numpy loads only to draw an interval (the memo answers the others).
    import numpy as np

    if samples.size == 0:
        return None
    # (1 - 0.95) / 2 is 0.025000000000000022 in floating point: inverted_cdf then took the
    # 51st of 2,000 draws for the 50th, whose share already reaches 2.5 % (the exact path
    # allows the same 1e-12).
    low = float(np.quantile(samples, tail - 1e-12, method="inverted_cdf"))
    high = float(np.quantile(samples, 1.0 - tail - 1e-12, method="inverted_cdf"))
    return low, high


def around(interval: Interval | None, value: float | None) -> Interval | None:
    """``interval`` widened to take in ``value`` when rounding alone left it a hair outside
    (the same mean summed in another order)."""
    if interval is None or value is None:
        return interval
    low, high = interval
    if value < low <= value + 1e-9:
        low = value
    if value - 1e-9 <= high < value:
        high = value
    return low, high


def overlaps(a: Interval | None, b: Interval | None) -> bool:
    """Whether two intervals share a point (two figures the data cannot tell apart)."""
    return a is not None and b is not None and a[0] <= b[1] and b[0] <= a[1]


# --- runs -----------------------------------------------------------------------------------


def pass_hat_k(passes: int, runs: int, k: int) -> float:
    """pass^k: the chance that k runs drawn without replacement from ``runs`` all pass,
    C(passes, k) / C(runs, k) — with k = runs, 1 when every run passed, else 0."""
    _check_k(passes, runs, k)
    return comb(passes, k) / comb(runs, k)


def pass_at_k(passes: int, runs: int, k: int) -> float:
    """pass@k: the chance that at least one of k runs drawn without replacement passes,
    1 - C(runs - passes, k) / C(runs, k)."""
    _check_k(passes, runs, k)
    return 1.0 - comb(runs - passes, k) / comb(runs, k)


def _check_k(passes: int, runs: int, k: int) -> None:
    if not 0 <= passes <= runs or not 1 <= k <= runs:
        raise ValueError(f"need 0 <= passes <= runs and 1 <= k <= runs, got passes={passes}, "
                         f"runs={runs}, k={k}")


def mean_sd(values: Sequence[float]) -> tuple[float, float | None] | None:
    """The mean and the sample standard deviation (n - 1; None for one value, of which no
    spread can be estimated: 0 read as "perfectly stable")."""
    if not values:
        return None
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, None
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(var)
