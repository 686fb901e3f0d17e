"""Which share of a suite one CI job runs: ``--callqa-shard i/N`` splits the cases into N
stable parts, every model's pairs of a case in the case's part, so N jobs together score every
(model, case) pair exactly once and ``python -m pytest_callqa merge`` can put their reports
back together. The same digest splits the cases among xdist workers for their up-front calls
(run/resolver.py).

By case, not by pair: two models' identical judgements of one case (the same output, the
same request) are sent once and charged to one of them, as in a single run, only when both
pairs are judged in one process; split apart, each shard sent and charged its own, and the
merged report counted requests and per-model judge calls no single run makes."""

from __future__ import annotations

import hashlib
import re

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` → ``(2, 4)``: shard 2 of 4, counted from 1.

    Raises ValueError naming the value when it is not ``i/N`` with ``1 <= i <= N``.
    """
    found = _SHARD.fullmatch(text)
    if found is None:
        raise ValueError(f"shard {text!r}: expected i/N, the shard's number and the number "
                         "of shards (e.g. 2/4)")
    index, count = int(found.group(1)), int(found.group(2))
    if count < 1:
        raise ValueError(f"shard {text!r}: the number of shards must be at least 1")
    if not 1 <= index <= count:
        raise ValueError(f"shard {text!r}: the shard's number must be between 1 and {count}")
    return index, count


def shard_of(case_id: str, count: int) -> int:
    """The shard (1 to ``count``) that scores every model's pair of ``case_id``.

    A digest of the case id rather than ``hash()``, which Python salts per process: every
    job, on every machine and in every run, must put a case in the same shard.
    """
    if count < 1:
        raise ValueError(f"the number of shards must be at least 1, not {count}")
    digest = hashlib.sha256(case_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(case_id: str, index: int, count: int) -> bool:
    """Whether shard ``index`` of ``count`` scores the pairs of ``case_id``."""
    if not 1 <= index <= count:
        raise ValueError(f"shard {index}/{count}: the shard's number must be between 1 and "
                         f"{count}")
    return shard_of(case_id, count) == index


def worker_share(worker_id: object, workers: object) -> tuple[int, int] | None:
    """Which share of the cases an xdist worker resolves up front: ``(i, N)`` for worker
    ``gw{i-1}`` of ``N`` (xdist's ``workerid`` and ``workercount``); None outside xdist."""
    if not isinstance(worker_id, str) or workers is None:
        return None
    return int(worker_id.removeprefix("gw")) + 1, int(str(workers))
