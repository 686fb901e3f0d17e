"""Numbers read from what others wrote (a judge's reply, a server's usage, a case file, a
report): JSON, YAML and TOML give integers of any size, and ``math.isfinite`` raises
OverflowError on one past the largest float, which crashed whatever read it. Standard library
only: every layer reads such numbers."""

from __future__ import annotations

import math
from typing import Any


def finite_number(value: Any) -> bool:
    """Whether ``value`` is a real number a float can hold: an int or a float, not a bool,
    not NaN or an infinity, and not an int past the largest float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


# Larger than any score, rate, count, duration or cost an evaluation measures, yet far from
# where a sum of a few million such numbers overflows to infinity (a mean or a gate's change
# that JSON cannot write).
MAX_MAGNITUDE = 1e15


def measurable(value: Any) -> bool:
    """A :func:`finite_number` of at most :data:`MAX_MAGNITUDE` either side of zero."""
    return finite_number(value) and abs(value) <= MAX_MAGNITUDE
