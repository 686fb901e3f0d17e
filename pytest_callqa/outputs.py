"""Model outputs: recorded files, their token usage, and what a call cost.

Recorded outputs live at ``<outputs_dir>/<model>/<case_id>.json``; the file holds what the
model returned, verbatim, so it may be a JSON object or any text (a non-JSON reply is scored
as such, not rejected). ``<outputs_dir>/<model>/_usage.json`` optionally maps each case id to
``{"prompt_tokens": n, "completion_tokens": m}`` (a key naming no case is an error: see
:func:`read_usage`); with a price per million tokens for the model
(:class:`~pytest_callqa.engine.pricing.PriceTable`: ``callqa_prices`` lines over the
built-in defaults) the plugin turns it into ``usage["cost_usd"]``.

This module imports only the standard library: the plugin reads settings with it at start-up.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .engine.core.numbers import finite_number

if TYPE_CHECKING:
    from .engine.pricing import PriceTable

USAGE_FILE = "_usage.json"
OUTPUT_SUFFIX = ".json"
TOKEN_KEYS = ("prompt_tokens", "completion_tokens")


class OutputsError(ValueError):
    """A recorded-outputs file that cannot be used; the message names it."""


@dataclass
class ModelOutput:
    """What a model produced for one case, with what producing it used.

    ``value`` is the parsed JSON when the reply was JSON text, else the text itself.
    ``usage`` holds ``prompt_tokens``/``completion_tokens`` and, when known, ``cost_usd``.
    ``source`` says where it came from (a file path, or the generating hook).
    """

    value: Any
    usage: dict[str, float] = field(default_factory=dict)
    source: str = "pytest_callqa_generate"


def parse_output_text(text: str) -> Any:
    """The JSON value of ``text`` when it is JSON, else ``text`` unchanged: also when it is
    JSON that Python will not read (a number of over 4,300 digits, nesting deeper than the
    recursion limit), which the engine then scores as the unreadable reply it is."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def output_path(outputs_dir: Path, model: str, case_id: str) -> Path:
    return outputs_dir / model / f"{case_id}{OUTPUT_SUFFIX}"


def read_output(path: Path) -> ModelOutput | None:
    """The recorded output at ``path``, or None when there is no such file."""
    try:
        # A byte-order mark is how the file was saved, not what the model answered.
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        # Undecodable bytes are a broken reply, which the engine scores as such.
        return ModelOutput(value=path.read_bytes(), source=str(path))
    except OSError as exc:
        # A directory, or a file this process may not read: not an output to score.
        raise OutputsError(f"{path}: cannot be read as an output ({exc.strerror})") from None
    return ModelOutput(value=parse_output_text(text), source=str(path))


def _is_count(value: Any) -> bool:
    return finite_number(value) and value >= 0


def usage_problem(usage: Any) -> str | None:
    """Why the usage a ``pytest_callqa_generate`` gave cannot be counted (None: it can): a
    NaN or a text there ended the run in a TypeError at the scorecard, after every test."""
    if not isinstance(usage, Mapping):
        return f"usage must map names to counts, got {type(usage).__name__}"
    for key, value in usage.items():
        if not isinstance(key, str) or not _is_count(value):
            return f"usage[{key!r}] must be a finite, non-negative number, got {value!r}"
    return None


_JSON_KINDS = "dict, list, str, int, float, bool or None"


def output_problem(value: Any) -> str | None:
    """Why ``value`` cannot be what a model returned (None: it can be): it must be text, bytes
    (a reply that may not decode) or a JSON value, as a recorded file gives. Anything else a
    ``pytest_callqa_generate`` hands back (an object, a set) is the hook's mistake, which
    scoring would charge to the model."""
    if isinstance(value, bytes):
        return None
    # Walked without recursion: an output may nest deeper than Python's recursion limit.
    todo: list[tuple[Any, str]] = [(value, "the value")]
    while todo:
        item, where = todo.pop()
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return (f"{where} has the key {key!r}, of type {type(key).__name__}: the "
                            "keys of a JSON object are str")
            todo.extend((item[key], f"{where}[{key!r}]") for key in reversed(list(item)))
        elif isinstance(item, list):
            todo.extend((item[i], f"{where}[{i}]") for i in reversed(range(len(item))))
        elif not isinstance(item, (str, int, float, type(None))):
            kinds = "text, bytes or a JSON value" if item is value else "a JSON value"
            return f"{where} is of type {type(item).__name__}, not {kinds} ({_JSON_KINDS})"
        elif isinstance(item, int) and _too_long(item):
            # Python writes no int of more digits than its limit as text: the report's
            # JSON could not hold it, and the run ended in an INTERNALERROR.
            return (f"{where} is an integer of more than {sys.get_int_max_str_digits():,} "
                    "digits, which no JSON text can be written for")
    return None


def own_copy(value: Any) -> Any:
    """A test's own copy of an output (a value :func:`output_problem` accepts): a test that
    changes ``callqa_output`` in place changed what its pair was scored on, the report, and
    the outcome of the pair's other tests. Text, bytes and numbers cannot be changed in place,
    and are not copied."""
    if not isinstance(value, (dict, list)):
        return value
    copied: Any = {} if isinstance(value, dict) else []
    # Walked without recursion: an output may nest deeper than Python's recursion limit.
    todo: list[tuple[Any, Any]] = [(value, copied)]
    while todo:
        source, target = todo.pop()
        for key, item in (source.items() if isinstance(source, dict) else enumerate(source)):
            kept = item
            if isinstance(item, (dict, list)):
                kept = {} if isinstance(item, dict) else []
                todo.append((item, kept))
            if isinstance(target, dict):
                target[key] = kept
            else:
                target.append(kept)
    return copied


def _too_long(number: int) -> bool:
    limit = sys.get_int_max_str_digits()
    # Three bits a digit is fewer than a digit holds: such a number is within the limit.
    if not limit or abs(number).bit_length() <= 3 * limit:
        return False
    try:
        str(number)
    except ValueError:
        return True
    return False


def read_usage(model_dir: Path, case_ids: Set[str]) -> dict[str, dict[str, float]]:
    """Token usage per case id from ``<model_dir>/_usage.json`` (empty when absent).

    A key must name a case of ``case_ids`` (the whole catalogue, not a run's selection) or an
    output file beside it (a case of another catalogue, as when ``--callqa-cases`` points at
    some families only): a typo or a stale id would leave the case meant without a cost,
    and nobody told.
    """
    path = model_dir / USAGE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except RecursionError:
        raise OutputsError(f"{path}: not valid JSON (nested deeper than Python reads)") \
            from None
    except ValueError as exc:
        # Not JSON, not UTF-8, or a number of over 4,300 digits.
        raise OutputsError(f"{path}: not valid JSON ({exc})") from None
    except OSError as exc:
        # A folder of that name, or a file this user may not read: the run's input, named.
        raise OutputsError(f"{path}: cannot be read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise OutputsError(f"{path}: must map case ids to token counts, "
                           f"got {type(data).__name__}")
    usage: dict[str, dict[str, float]] = {}
    for case_id, counts in data.items():
        if not isinstance(counts, dict):
            raise OutputsError(f"{path}: {case_id}: must be an object of token counts")
        entry = {}
        for key in TOKEN_KEYS:
            value = counts.get(key)
            if value is None:
                continue
            if not _is_count(value):
                raise OutputsError(f"{path}: {case_id}.{key}: must be a finite, non-negative "
                                   f"number, got {value!r}")
            entry[key] = float(value)
        usage[case_id] = entry
    unknown = set(usage) - case_ids
    if unknown:
        unknown -= _recorded_ids(model_dir)
    if unknown:
        listed = sorted(unknown)
        shown = ", ".join(map(repr, listed[:3])) + (
            f" and {len(listed) - 3} more" if len(listed) > 3 else "")
        raise OutputsError(f"{path}: {shown}: names no golden case and no output file "
                           "beside it (a typo or a stale id: the case meant has no usage)")
    return usage


def _recorded_ids(model_dir: Path) -> set[str]:
    """The case ids of the output files in ``model_dir``, as written (a file system that
    ignores letter case would find the file under a key that differs from the case id)."""
    try:
        names = [entry.name for entry in os.scandir(model_dir)]
    except OSError:
        return set()
    return {name[:-len(OUTPUT_SUFFIX)] for name in names
            if name.endswith(OUTPUT_SUFFIX) and name != USAGE_FILE}


def discover_models(outputs_dir: Path) -> list[str]:
    """Model names: the sub-directories of ``outputs_dir`` (hidden and ``_`` ones excluded)."""
    if not outputs_dir.is_dir():
        return []
    return sorted(
        p.name for p in outputs_dir.iterdir()
        if p.is_dir() and not p.name.startswith((".", "_"))
    )


def with_cost(usage: Mapping[str, float], prices: PriceTable, model: str) -> dict[str, float]:
    """``usage`` plus ``cost_usd`` when it is not there yet and ``model`` has a price."""
    result = dict(usage)
    if "cost_usd" not in result and all(key in result for key in TOKEN_KEYS):
        cost = prices.cost(model, result["prompt_tokens"], result["completion_tokens"])
        # A price times a count can overflow: a cost that is not a number is not known.
        if cost is not None and math.isfinite(cost):
            result["cost_usd"] = cost
    return result


def for_report(value: Any) -> Any:
    """A model's output as the report keeps it (JSON builtins). One nested deeper than Python
    reads was scored (its schema let the depth through), but cannot be written: the pair keeps
    its result, and the report says why its output is not there."""
    # Loaded with the engine already: the output has been scored.
    from .engine.core.results import plain

    try:
        return plain(value)
    except RecursionError:
        return f"(not kept: the output is nested deeper than {sys.getrecursionlimit()} levels)"

