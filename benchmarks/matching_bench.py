"""Time all-pairs similarity and greedy matching on 1,000 x 1,000 short call-centre phrases.

Run as ``python benchmarks/matching_bench.py``; prints one line per figure, best of 3 runs.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from functools import partial
from typing import get_args

import numpy as np

from pytest_callqa.engine.matching import Method, greedy_match, similarity_matrix

N = 1_000
REPEATS = 3
SEED = 20240305
_VOCABULARY_TEXT = (
    "refund request billing issue account management cancel subscription upgrade plan "
    "payment failed card declined invoice overdue late fee waiver discount offer renewal "
    "pricing negotiation ROI analysis delivery delayed order tracking replacement damaged "
    "item technical support password reset login error escalation supervisor callback "
    "follow-up email confirmation customer satisfaction complaint resolved pending "
    "रिफंड खाता भुगतान शिकायत"
)
VOCABULARY = _VOCABULARY_TEXT.split()


def phrases(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choices(VOCABULARY, k=rng.randint(2, 5))) for _ in range(n)]


def best_of(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def report(label: str, seconds: float, cells: int) -> None:
    print(f"{label:<27} {seconds:8.4f} s  {cells / seconds:14,.0f} cells/s")


def main() -> None:
    rng = random.Random(SEED)
    a, b = phrases(rng, N), phrases(rng, N)
    cells = N * N
    for method in get_args(Method):
        report(f"similarity[{method}]", best_of(partial(similarity_matrix, a, b, method)), cells)
    jaccard = similarity_matrix(a, b, "jaccard")
    report("greedy_match[jaccard>=0.5]", best_of(lambda: greedy_match(jaccard, 0.5)), cells)
    # Every cell above the threshold is the worst case for the candidate walk.
    dense = np.random.default_rng(SEED).random((N, N))
    report("greedy_match[random>=0]", best_of(lambda: greedy_match(dense, 0.0)), cells)


if __name__ == "__main__":
    main()
