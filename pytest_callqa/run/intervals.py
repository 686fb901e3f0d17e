"""The scorecard's bootstrap intervals, kept beside the judge cache from one run to the next.

A re-run whose results are unchanged (every verdict from the cache) would draw the same
intervals again, loading numpy for it, which is a sixth of such a run's time. The intervals
a build used are stored in ``intervals.json`` in the cache directory; the next build looks
them up by the digest of their figures (:class:`~pytest_callqa.engine.stats.IntervalMemo`)
and draws only the ones it does not find. The file is read only while it was written by the
same statistics code (a digest of ``engine/stats.py``) with the same numpy (whose
generator's stream may change between versions); otherwise it is ignored, and rewritten.
It follows the cache's mode: read and written with ``rw``, only read with ``ro``, neither
with ``off``, and only in a cache directory that exists (a run with no judge calls does not
create one for it).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
from importlib import metadata
from pathlib import Path
from typing import Any

from ..engine import stats
from ..engine.llm.cache import write_whole
from ..engine.stats import Interval, IntervalMemo
from .settings import Settings

MEMO_FILE = "intervals.json"
MEMO_FORMAT = 1


@functools.cache
def _stamp() -> dict[str, str] | None:
    """What the stored intervals depend on besides their figures; None when unknown. Read
    once per process: the run's load and store see the same code and numpy."""
    try:
        code = Path(stats.__file__).read_bytes()
        numpy = metadata.version("numpy")
    except (OSError, metadata.PackageNotFoundError):
        return None
    return {"stats": hashlib.sha256(code).hexdigest(), "numpy": numpy}


def _path(settings: Settings) -> Path | None:
    if settings.cache == "off" or settings.cache_dir is None:
        return None
    if not settings.cache_dir.is_dir():
        return None
    return settings.cache_dir / MEMO_FILE


def load_memo(settings: Settings) -> IntervalMemo | None:
    """The intervals the last run stored (none when the file is missing, unreadable, or
    from other code); None when the cache is off or has no directory."""
    path = _path(settings)
    if path is None:
        return None
    stamp = _stamp()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        # Unreadable, not JSON, or nested past the parser's depth: drawn again.
        return IntervalMemo()
    if not isinstance(data, dict) or stamp is None or data.get("format") != MEMO_FORMAT \
            or data.get("stamp") != stamp or not isinstance(data.get("intervals"), dict):
        return IntervalMemo()
    return IntervalMemo(_stored(data["intervals"]))


def _stored(entries: dict[str, Any]) -> dict[str, Interval | None]:
    """The well-formed entries: null (no interval), or two finite numbers, low <= high.
    Any other entry is left out, so its interval is drawn again."""
    found: dict[str, Interval | None] = {}
    for key, value in entries.items():
        if value is None:
            found[key] = None
            continue
        if not (isinstance(value, list) and len(value) == 2 and all(
                isinstance(v, float | int) and not isinstance(v, bool) for v in value)):
            continue
        try:
            low, high = float(value[0]), float(value[1])
        except OverflowError:
            continue  # an integer too large for a float
        if math.isfinite(low) and math.isfinite(high) and low <= high:
            found[key] = (low, high)
    return found


def save_memo(memo: IntervalMemo, settings: Settings) -> None:
    """Store the intervals this build used, when it drew any or used fewer than it found
    (the file keeps one run's intervals, not every run's); written whole or not at all."""
    path = _path(settings)
    stamp = _stamp()
    if path is None or settings.cache != "rw" or stamp is None:
        return
    if not memo.drawn and memo.kept.keys() == memo.found.keys():
        return
    intervals = {key: (None if value is None else list(value))
                 for key, value in memo.kept.items()
                 if value is None or all(math.isfinite(v) for v in value)}
    text = json.dumps({"format": MEMO_FORMAT, "stamp": stamp, "intervals": intervals},
                      separators=(",", ":"))
    # A store that fails (a full disk, a read-only directory) costs the next run its
    # speed-up, never this run its report.
    with contextlib.suppress(OSError):
        write_whole(path, text, prefix=".intervals.")
