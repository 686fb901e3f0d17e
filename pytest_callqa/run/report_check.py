"""What the baseline gate reads of a JSON report, checked before it reads any of it: every key
it reads present where it must be, and of the type it uses. A report damaged or edited by
hand is refused with its file and the key (``main.json: cases[3]: key 'score' should be a
number or null, not a string``) — up front, when the run starts — rather than ending a run,
after its last test, in a traceback that names neither.

It loads nothing the plugin has not loaded by then (no numpy, no task family): the plugin
checks a baseline while it starts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..engine.core.numbers import MAX_MAGNITUDE, finite_number, measurable
from .gaps import CATALOGUE_CASES
from .summary import REPORT_SCHEMA


def _number(value: Any) -> bool:
    # A NaN or an infinity (which json.loads reads) would reach the gate's JSON, which
    # refuses them, after the last test; so would a sum of numbers near the largest float.
    return measurable(value)


# Each kind of value the gate reads: how it is told, and how a message names it.
_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "object": (lambda v: isinstance(v, Mapping), "an object"),
    "array": (lambda v: isinstance(v, list), "an array"),
    "string": (lambda v: isinstance(v, str), "a string"),
    "boolean": (lambda v: isinstance(v, bool), "true or false"),
    "number": (_number, "a number"),
}


# The containers a run writes where null may stand too (a plain case's, tested by type).
_LIST_OR_NULL = (list, type(None))
_DICT_OR_NULL = (dict, type(None))


def _kind(value: Any) -> str:
    """What ``value`` is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int) and not finite_number(value):
        return "a number too large for a float"
    if finite_number(value) and not measurable(value):
        return f"a number beyond ±{MAX_MAGNITUDE:g}, which no measurement reaches"
    for test, words in (_KINDS["number"], _KINDS["string"], _KINDS["array"], _KINDS["object"]):
        if test(value):
            return words
    return type(value).__name__


def _get(data: Mapping[str, Any], key: str, kind: str, where: str, *, required: bool = False,
         null: bool = True) -> Any:
    """``data[key]`` when it is of ``kind`` (or null, where ``null`` allows it); None when it
    is absent and not ``required``. Raises ``ValueError`` naming ``where`` and the key."""
    if key not in data:
        if required:
            raise ValueError(f"{where}: missing key {key!r}")
        return None
    value = data[key]
    test, words = _KINDS[kind]
    if test(value) or (null and value is None):
        return value
    raise ValueError(f"{where}: key {key!r} should be {words}{' or null' if null else ''}, "
                     f"not {_kind(value)}")


def check_report(data: Any, name: str) -> None:
    """Raise ``ValueError`` naming ``name`` and the key when ``data`` is not a
    ``callqa-report/1`` report the gate can read: a key it needs missing, or a value it reads
    of another type (a number where a list is, a NaN, a string of blockers)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{name}: not a callqa report (a JSON object is expected, got "
                         f"{_kind(data)})")
    schema = data.get("schema")
    if schema != REPORT_SCHEMA:
        raise ValueError(f"{name}: key 'schema' is {schema!r}, expected {REPORT_SCHEMA!r}")
    run = _get(data, "run", "object", name, null=False)
    if run is not None:
        for key in ("versions", "judge", "embeddings"):
            _get(run, key, "object", f"{name}: run")
        for i, listed in enumerate(_get(run, CATALOGUE_CASES, "array", f"{name}: run") or ()):
            if not (isinstance(listed, list) and len(listed) == 2
                    and all(isinstance(part, str) for part in listed)):
                found = (f"[{', '.join(_kind(part) for part in listed)}]"
                         if isinstance(listed, list) else _kind(listed))
                raise ValueError(f"{name}: run.{CATALOGUE_CASES}[{i}] should be a task and a "
                                 f"case id (two strings), not {found}")
    models = _get(data, "models", "object", name, required=True, null=False)
    specs = _get(data, "metric_specs", "object", name, required=True, null=False)
    cases = _get(data, "cases", "array", name, required=True, null=False)
    for i, entry in enumerate(_get(data, "not_evaluated", "array", name) or ()):
        _check_not_evaluated(entry, f"{name}: not_evaluated[{i}]")
    for model in models:
        _check_model(_get(models, model, "object", f"{name}: models", null=False),
                     f"{name}: models.{model}")
    for task in specs:
        for i, spec in enumerate(_get(specs, task, "array", f"{name}: metric_specs",
                                      null=False)):
            _check_spec(spec, f"{name}: metric_specs.{task}[{i}]")
    for i, case in enumerate(cases):
        # A report holds up to 100,000 cases, nearly all of one plain shape: that is tested in
        # one pass, and only a case that fails it is gone through key by key for the message.
        if not _plain_case(case):
            _check_case(case, f"{name}: cases[{i}]")


def _check_model(entry: Mapping[str, Any], where: str) -> None:
    tasks = _get(entry, "tasks", "object", where, required=True, null=False)
    for task in tasks:
        agg = _get(tasks, task, "object", f"{where}.tasks", null=False)
        at = f"{where}.tasks.{task}"
        _get(agg, "score", "number", at)
        # Null where a scorecard says the judge left it unknown.
        _get(agg, "disqualified", "boolean", at)
        _get(agg, "disqualification_unknown", "boolean", at)
        _get(agg, "blocked_cases", "number", at)
        metrics = _get(agg, "metrics", "object", at, required=True, null=False)
        for mid in metrics:
            figure = _get(metrics, mid, "object", f"{at}.metrics")
            if figure is not None:
                _get(figure, "value", "number", f"{at}.metrics.{mid}")
    # The Layer 2 criteria the gate compares as the task "benchmarks".
    benchmarks = _get(entry, "benchmarks", "object", where, null=False) or {}
    for bid in benchmarks:
        figure = _get(benchmarks, bid, "object", f"{where}.benchmarks", null=False)
        _get(figure, "value", "number", f"{where}.benchmarks.{bid}")


def _check_not_evaluated(entry: Any, where: str) -> None:
    """A pair the report did not evaluate: the gate reads which, when its test errored or it
    had no output; and a case file it could not read, which the gate names."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: should be an object, not {_kind(entry)}")
    if entry.get("kind") in ("test_error", "missing_output", "unproduced_run"):
        for key in ("model", "case_id"):
            _get(entry, key, "string", where, required=True, null=False)
    elif entry.get("kind") == "invalid_case_file":
        _get(entry, "path", "string", where, required=True, null=False)


def _check_spec(spec: Any, where: str) -> None:
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where}: should be an object, not {_kind(spec)}")
    _get(spec, "id", "string", where, required=True, null=False)
    bands = _get(spec, "bands", "object", where)
    if bands is not None:
        _get(bands, "higher_is_better", "boolean", f"{where}.bands", null=False)
        # The edges a scorecard rebuilt from the report rates values by.
        _get(bands, "good", "number", f"{where}.bands", required=True, null=False)
        for edge in ("acceptable", "blocker"):
            _get(bands, edge, "number", f"{where}.bands")
    _get(spec, "aggregate", "string", where)
    _get(spec, "scale", "string", where)
    tolerance = _get(spec, "regression_tolerance", "number", where)
    if tolerance is not None and tolerance < 0:
        raise ValueError(f"{where}: key 'regression_tolerance' should be a number >= 0 or "
                         f"null, not {tolerance!r}")


def _plain_case(case: Any) -> bool:
    """Whether ``case`` has the shape a run writes, each key the gate reads of the type it
    reads: the quick test every case takes. :func:`_check_case` finds what is wrong with a
    case that fails it (or passes one of another shape that is still fine)."""
    if (type(case) is not dict or type(case.get("model")) is not str
            or type(case.get("task")) is not str or type(case.get("case_id")) is not str):
        return False
    score, metrics = case.get("score"), case.get("metrics")
    if ((score is not None and not _number(score))
            or type(case.get("valid", True)) is not bool or type(metrics) is not dict
            or type(case.get("judge_errors", [])) not in _LIST_OR_NULL
            or type(case.get("blockers", [])) not in _LIST_OR_NULL):
        return False
    for metric in metrics.values():
        if metric is None:
            continue
        if type(metric) is not dict:
            return False
        value, details = metric.get("value"), metric.get("details")
        scored = metric.get("scored", True)
        if ((value is not None and not _number(value)) or type(scored) is not bool
                or type(details) not in _DICT_OR_NULL):
            return False
        if details and value is not None and scored:
            for key in ("numerator", "denominator"):
                if key in details and not _number(details[key]):
                    return False
    return True


def _check_case(case: Any, where: str) -> None:
    if not isinstance(case, Mapping):
        raise ValueError(f"{where}: should be an object, not {_kind(case)}")
    for key in ("model", "task", "case_id"):
        _get(case, key, "string", where, required=True, null=False)
    _get(case, "score", "number", where)
    _get(case, "valid", "boolean", where, null=False)
    _get(case, "judge_errors", "array", where)
    _get(case, "blockers", "array", where)
    metrics = _get(case, "metrics", "object", where, required=True, null=False)
    for mid, metric in metrics.items():
        if metric is None:
            continue
        at = f"{where}.metrics.{mid}"
        _get(metrics, mid, "object", f"{where}.metrics")
        value = _get(metric, "value", "number", at)
        scored = _get(metric, "scored", "boolean", at, null=False)
        details = _get(metric, "details", "object", at)
        # The counts the gate pools, read only from a scored value.
        if details is not None and value is not None and scored is not False:
            for key in ("numerator", "denominator"):
                _get(details, key, "number", f"{at}.details", null=False)
