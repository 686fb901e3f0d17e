"""Judge calibration: how far the judge agrees with the values people gave (``human_labels``).

A labelled case is an ordinary golden case; the output people labelled is the one a chosen
model (``human`` by default) recorded for it. The run scores that output as usual, and each
label is set beside the value the run reported for its metric. Per metric this module gives
n, exact agreement, Cohen's kappa (linear-weighted when the scale has more than two ordered
categories, unweighted otherwise), Spearman's rho, the mean bias (how much more lenient the
judge is than people) and the confusion matrix. Pure Python: the statistics are small sums
over a few hundred labels.

Categories come from the metric's scale: a grid scale (``0/0.5/1``) is its own categories, an
integer rubric (``1-5``, ``0-5``) its levels, and a continuous scale (``0-1``, ``rate``,
``count``...) the metric's rating bands (blocker < fail < acceptable < good), so a label and
a judge value agree when they land in the same band. A continuous metric without bands
cannot be put in categories and takes no label. Spearman and the bias use the raw values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .core.defaults import DEFAULT_MIN_KAPPA
from .core.metrics import CASE_BAR, Bands, MetricSpec
from .core.results import Rating

if TYPE_CHECKING:
    from .core.cases import GoldenCase
    from .core.results import TaskResult

_GRID = re.compile(r"^\s*-?\d+(?:\.\d+)?(?:\s*/\s*-?\d+(?:\.\d+)?)+\s*$")
_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*$")
# Widest integer range read as rubric levels; wider ones (0-100) are continuous.
_MAX_LEVELS = 11
_WORST_FIRST: tuple[Rating, ...] = ("blocker", "fail", "acceptable", "good")
_EPS = 1e-9


@dataclass(frozen=True)
class LabelScale:
    """How labels and judge values of one metric are checked and put in categories."""

    low: float
    high: float
    categories: tuple[str, ...]
    integers: bool = False
    grid: tuple[float, ...] = ()
    bands: Bands | None = None

    @property
    def weighted(self) -> bool:
        """Linear weights for ordered categories; two categories are merely equal or not."""
        return len(self.categories) > 2

    def problem(self, value: float) -> str | None:
        """Why ``value`` is not a label on this scale, or None."""
        if not math.isfinite(value) or value < self.low - _EPS or value > self.high + _EPS:
            return f"{value:g} is outside {self.describe()}"
        if self.grid and not any(abs(value - g) < _EPS for g in self.grid):
            return f"{value:g} is not one of {self.describe()}"
        if self.integers and abs(value - round(value)) > _EPS:
            return f"{value:g} is not a whole number ({self.describe()})"
        return None

    def describe(self) -> str:
        if self.grid:
            return "/".join(f"{g:g}" for g in self.grid)
        high = "∞" if math.isinf(self.high) else f"{self.high:g}"
        kind = "whole numbers" if self.integers else "numbers"
        return f"{kind} {self.low:g}–{high}"

    def category(self, value: float) -> int:
        """The index of ``value``'s category (worst or lowest first)."""
        if self.grid:
            return min(range(len(self.grid)), key=lambda i: abs(self.grid[i] - value))
        if self.bands is None:
            return math.floor(min(max(value, self.low), self.high) - self.low + 0.5)
        # ``_reachable`` keeps every band ``Bands.rate`` can answer, whatever the order of
        # the bounds a policy set.
        return self.categories.index(self.bands.rate(value))


def _reachable(bands: Bands) -> tuple[Rating, ...]:
    """The ratings some value can get, worst first (a band between equal bounds is empty)."""
    inf = math.inf
    if bands.higher_is_better:
        floor = bands.blocker if bands.blocker is not None else -inf
        spans = {"blocker": (-inf, floor),
                 "fail": (floor, bands.acceptable if bands.acceptable is not None
                          else bands.good),
                 "acceptable": (bands.acceptable if bands.acceptable is not None
                                else bands.good, bands.good),
                 "good": (bands.good, inf)}
    else:
        ceiling = bands.blocker if bands.blocker is not None else inf
        top = bands.acceptable if bands.acceptable is not None else bands.good
        spans = {"blocker": (ceiling, inf), "fail": (top, ceiling),
                 "acceptable": (bands.good, top), "good": (-inf, bands.good)}
    return tuple(r for r in _WORST_FIRST if spans[r][0] < spans[r][1])


def label_scale(spec: MetricSpec) -> LabelScale | str:
    """The metric's label scale, or why its values cannot be put in categories."""
    text = spec.scale.split("→")[-1].strip().lower()
    if _GRID.match(text):
        grid = tuple(sorted({float(v) for v in text.split("/")}))
        return LabelScale(low=grid[0], high=grid[-1], grid=grid,
                          categories=tuple(f"{g:g}" for g in grid))
    low, high, integers = -math.inf, math.inf, False
    match = _RANGE.match(text)
    if match:
        low, high = float(match.group(1)), float(match.group(2))
        whole = low.is_integer() and high.is_integer()
        if whole and 2 <= high - low < _MAX_LEVELS:
            levels = range(int(low), int(high) + 1)
            return LabelScale(low=low, high=high, integers=True,
                              categories=tuple(str(v) for v in levels))
    elif text in ("rate", "unit"):
        low, high = 0.0, 1.0
    elif text == "count":
        low, integers = 0.0, True
    if spec.bands is None:
        return (f"its scale {spec.scale!r} is continuous and it has no rating bands, so a "
                "label cannot be put in a category")
    return LabelScale(low=low, high=high, integers=integers, bands=spec.bands,
                      categories=_reachable(spec.bands))


def label_problems(case: GoldenCase, specs: Iterable[MetricSpec]) -> list[str]:
    """Problems with the case's ``human_labels``, each as ``human_labels.<metric>: ...``."""
    known = {spec.id: spec for spec in specs}
    problems = []
    for metric, label in case.human_labels.items():
        where = f"human_labels.{metric}"
        spec = known.get(metric)
        if spec is None:
            problems.append(f"{where}: task {case.task!r} has no metric {metric!r} (known: "
                            f"{', '.join(sorted(known))})")
            continue
        scale = label_scale(spec)
        if isinstance(scale, str):
            problems.append(f"{where}: {metric} takes no label: {scale}")
            continue
        problem = scale.problem(label.value)
        if problem is not None:
            problems.append(f"{where}: {problem}, the scale of {metric} ({spec.scale})")
    return problems


# --- statistics -------------------------------------------------------------------------


def confusion(human: Sequence[int], judge: Sequence[int], k: int) -> list[list[int]]:
    """Counts of (people's category, judge's category): rows people, columns judge."""
    matrix = [[0] * k for _ in range(k)]
    for h, j in zip(human, judge, strict=True):
        matrix[h][j] += 1
    return matrix


def cohen_kappa(human: Sequence[int], judge: Sequence[int], k: int, *,
                weighted: bool) -> float | None:
    """Cohen's kappa over categories ``0..k-1``; linear weights ``|i − j|`` when
    ``weighted``. None when chance alone explains every pair (both sides use one category)
    or there is no pair."""
    n = len(human)
    if n == 0:
        return None
    observed = confusion(human, judge, k)
    rows = [sum(r) for r in observed]
    cols = [sum(observed[i][j] for i in range(k)) for j in range(k)]

    def weight(i: int, j: int) -> float:
        return abs(i - j) if weighted else float(i != j)

    disagreement = sum(weight(i, j) * observed[i][j] for i in range(k) for j in range(k))
    chance = sum(weight(i, j) * rows[i] * cols[j] / n for i in range(k) for j in range(k))
    if chance == 0:
        return None
    return 1.0 - disagreement / chance


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start:end + 1]:
            ranks[i] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson's r of the average ranks); None when a side is constant."""
    if len(x) != len(y):
        raise ValueError(f"spearman needs pairs: {len(x)} values against {len(y)}")
    if len(x) < 2:
        return None
    rx, ry = _ranks(x), _ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def agreement(human: Sequence[int], judge: Sequence[int]) -> float | None:
    """Share of pairs in the same category."""
    if not human:
        return None
    return sum(h == j for h, j in zip(human, judge, strict=True)) / len(human)


def mean_bias(human: Sequence[float], judge: Sequence[float], *,
              higher_is_better: bool = True) -> float | None:
    """How much more lenient the judge is than people, in the metric's units: the mean of
    judge − people, or of people − judge when lower is better (a hallucination rate), so
    above 0 the judge is more lenient and below 0 stricter whatever the metric's direction."""
    if not human:
        return None
    sign = 1.0 if higher_is_better else -1.0
    return sign * sum(j - h for h, j in zip(human, judge, strict=True)) / len(human)


# --- a run's calibration ------------------------------------------------------------------


@dataclass
class _Pairs:
    spec: MetricSpec
    scale: LabelScale
    labels: int = 0
    not_scored: int = 0
    judge_error: int = 0
    code_error: int = 0
    not_evaluated: int = 0
    case_bar: int = 0

    def __post_init__(self) -> None:
        self.items: list[tuple[str, float, float]] = []
        # Why each label counted not_evaluated has no result: why → count.
        self.not_evaluated_why: dict[str, int] = {}


def _entry(pairs: _Pairs) -> dict[str, Any]:
    scale = pairs.scale
    human = [h for _, h, _ in pairs.items]
    judge = [j for _, _, j in pairs.items]
    hc = [scale.category(v) for v in human]
    jc = [scale.category(v) for v in judge]
    k = len(scale.categories)
    return {
        "task": pairs.spec.task,
        "scale": pairs.spec.scale,
        "source": pairs.spec.source,
        "categories": list(scale.categories),
        "weights": "linear" if scale.weighted else "none",
        "labels": pairs.labels,
        "n": len(pairs.items),
        "left_out": {"not_scored": pairs.not_scored, "judge_error": pairs.judge_error,
                     "code_error": pairs.code_error, "not_evaluated": pairs.not_evaluated,
                     "case_bar": pairs.case_bar},
        "not_evaluated_why": dict(sorted(pairs.not_evaluated_why.items())),
        "agreement": agreement(hc, jc),
        "kappa": cohen_kappa(hc, jc, k, weighted=scale.weighted),
        "spearman": spearman(human, judge),
        # A metric without bands counts as higher-is-better, as the baseline gate reads it.
        "bias": mean_bias(human, judge, higher_is_better=pairs.spec.bands is None
                          or pairs.spec.bands.higher_is_better),
        "confusion": confusion(hc, jc, k),
        "pairs": [[h, j] for h, j in zip(human, judge, strict=True)],
        "cases": [case_id for case_id, _, _ in pairs.items],
    }


# Why a labelled output has no result, when the run gave no other reason: no test of its
# case ran (deselected by -k, -m or the paths given).
NOT_SELECTED = "whose tests were not selected"


def calibrate(results: Iterable[TaskResult], cases: Iterable[GoldenCase],
              specs: Mapping[str, Sequence[MetricSpec]], model: str, *,
              not_run: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Per labelled metric, the judge's agreement with people on ``model``'s outputs.

    ``specs`` maps a task to its metrics. A label whose metric the run did not score (not
    scored, a judge error, or a custom metric whose code raised or returned no number) or
    whose case has no result
    for ``model`` is left out of n and counted under ``left_out``. ``not_run`` says why a
    case has no result for ``model`` (``"without an output"``...); a case it does not name
    counts as :data:`NOT_SELECTED`, in the entry's ``not_evaluated_why``. Keyed by metric
    id, or ``task.metric`` when two tasks share a labelled metric id.
    """
    not_run = not_run or {}
    # With --callqa-runs N, the first run's: the verdict a single-run session gives. Keyed
    # by case alone, the last run read overwrote the others, so the order of the results
    # decided which run was compared.
    scored = {r.case_id: r for r in results if r.model == model and r.run == 0}
    groups: dict[tuple[str, str], _Pairs] = {}
    unrated: dict[tuple[str, str], tuple[MetricSpec, str, list[str]]] = {}
    for case in cases:
        if not case.human_labels:
            continue
        by_id = {spec.id: spec for spec in specs.get(case.task, ())}
        result = scored.get(case.id)
        for metric, label in sorted(case.human_labels.items()):
            spec = by_id.get(metric)
            if spec is None:
                continue  # the loader refuses such a label; a hand-built case may not
            scale = label_scale(spec)
            if isinstance(scale, str):
                # A metric the run's policy left without rating bands (switched off): its
                # labels cannot be compared, and are counted rather than dropped unseen.
                unrated.setdefault((case.task, metric), (spec, scale, []))[2].append(case.id)
                continue
            pairs = groups.setdefault((case.task, metric), _Pairs(spec, scale))
            pairs.labels += 1
            found = result.metrics.get(metric) if result is not None else None
            if found is None:
                pairs.not_evaluated += 1
                why = not_run.get(case.id, NOT_SELECTED)
                pairs.not_evaluated_why[why] = pairs.not_evaluated_why.get(why, 0) + 1
            elif found.judge_error:
                pairs.judge_error += 1
            elif found.details.get("raised") or found.details.get("returned"):
                # The metric's code failed — it raised, or returned no number (NaN, text, a
                # truth value) — not the judge's answer: as unknown as a judge error.
                pairs.code_error += 1
            elif not found.scored or found.value is None:
                pairs.not_scored += 1
            elif found.details.get(CASE_BAR):
                # The run rated it by the case's own bar, whose categories are not the
                # metric's: sorted by the metric's bands, a value the run blocked read as
                # acceptable, and a disagreement the run showed as agreement.
                pairs.case_bar += 1
            else:
                pairs.items.append((case.id, label.value, float(found.value)))
    entries = {key: _entry(pairs) for key, pairs in groups.items()}
    entries.update((key, _unrated_entry(*found)) for key, found in unrated.items()
                   if key not in groups)
    shared = {metric for (task, metric) in entries
              if sum(1 for _, m in entries if m == metric) > 1}
    return {(f"{task}.{metric}" if metric in shared else metric): entry
            for (task, metric), entry in sorted(entries.items())}


def _unrated_entry(spec: MetricSpec, reason: str, cases: list[str]) -> dict[str, Any]:
    """The entry of a labelled metric whose labels cannot be put in categories: every label
    left out as ``not_rated``, with why."""
    return {"task": spec.task, "scale": spec.scale, "source": spec.source, "categories": [],
            "weights": "none", "labels": len(cases), "n": 0,
            "left_out": {"not_scored": 0, "judge_error": 0, "code_error": 0,
                         "not_evaluated": 0, "case_bar": 0, "not_rated": len(cases)},
            "not_evaluated_why": {}, "not_rated": reason, "agreement": None, "kappa": None,
            "spearman": None, "bias": None, "confusion": [], "pairs": [], "cases": []}


# Rounding of the kappa's sums: an agreement of exactly 3/5 came out 0.5999999999999999
# and failed a bar of 0.6 ("kappa 0.60 < 0.6").
KAPPA_SLACK = 1e-9


def verdict(calibration: Mapping[str, Mapping[str, Any]],
            min_kappa: float = DEFAULT_MIN_KAPPA) -> list[str]:
    """Why the calibration fails the run; empty when nothing fails it (see :func:`outcome`).

    A metric the judge scored on some labelled item must reach ``min_kappa``; an undefined
    kappa (every pair in one category) cannot show it and fails. A metric the judge scored
    on no labelled item gives no number to trust and is reported, not failed; but a run
    that compared no pair at all fails — unless judge errors or metric code errors left labels
    out: then nothing was compared because the tool could not give a value, which is the
    tool's failure, not the judge disagreeing with people (:func:`incomplete`).
    """
    problems = []
    for metric, entry in calibration.items():
        kappa: float | None = entry.get("kappa")
        n = entry.get("n", 0)
        if n and kappa is None:
            problems.append(f"{metric}: kappa undefined on {n} pairs (people and judge put "
                            "every pair in the same category): add labelled items of other "
                            "categories")
        elif n and kappa is not None and kappa < min_kappa - KAPPA_SLACK:
            shown = f"{kappa:.2f}"
            if float(shown) >= min_kappa:
                shown = f"{kappa:.4g}"  # "0.60 < 0.6" would read as a contradiction
            problems.append(f"{metric}: kappa {shown} < {min_kappa:g} on {n} pairs")
    if not any(entry.get("n") for entry in calibration.values()) \
            and not _tool_failed(calibration):
        problems.append("no labelled output was scored: nothing to calibrate (check the "
                        "labelled model's outputs and that the judge scores these metrics)")
    return problems


# The failures of the tool that leave a label without a value: left_out key, what it is
# called, why, and what to do before running again.
_TOOL_FAILURES = (
    ("judge_error", "judge errors", "the judge could not answer them",
     "run it again once the judge answers"),
    ("code_error", "metric code errors",
     "the metric's code raised on them or returned no number",
     "fix the metric's code and run it again"),
)
# Labels whose output the run did not evaluate: a calibration is one run over every labelled
# case, and one over a few of them vouches for the judge on labels it never saw.
_NOT_EVALUATED = ("not_evaluated", "labelled outputs not evaluated", "",
                  "run every labelled case, each with its labelled output")
# A case file the run could not read: no report says which cases, or labels, it held.
_UNREAD = ("case files that could not be read", "fix the case files the run names")


def _tool_failed(calibration: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether judge errors or metric code errors left labels out."""
    return any((entry.get("left_out") or {}).get(key)
               for entry in calibration.values() for key, *_ in _TOOL_FAILURES)


def incomplete(calibration: Mapping[str, Mapping[str, Any]],
               unread: Sequence[str] = ()) -> list[str]:
    """Why the calibration cannot pass even where no metric fails it: labels left out because
    the tool could not give them a value — a judge error (the call failed, the reply was
    unusable, the budget was spent) or a custom metric whose code raised or returned no
    number — or because the run did not evaluate their output (no output, a test error, its
    tests not selected).
    How the judge agrees with people on those is unknown, and a calibration that passed
    without them would vouch for a judge on labels it never saw. (Labels the judge abstained
    on — *not scored* — are its answer, and stay left out.) ``unread``: the case files the
    run could not read, whose labels, if they hold any, no metric's n counts."""
    found = []
    if unread:
        found.append(f"{len(unread)} case file{'s' * (len(unread) > 1)} could not be read "
                     f"({', '.join(unread)}): the labels {'they' if len(unread) > 1 else 'it'}"
                     " may hold were not compared")
    for metric, entry in calibration.items():
        left_out = entry.get("left_out") or {}
        for key, kind, why, _ in (*_TOOL_FAILURES, _NOT_EVALUATED):
            missing = left_out.get(key, 0)
            if not missing:
                continue
            if key == _NOT_EVALUATED[0]:
                whys = entry.get("not_evaluated_why") or {NOT_SELECTED: missing}
                why = ", ".join(f"{count} {reason}" for reason, count in whys.items())
            found.append(f"{metric}: {missing} of {entry.get('labels', missing)} labels "
                         f"left out for {kind} ({why}): its agreement on them is unknown")
    return found


def _incomplete_verdict(calibration: Mapping[str, Mapping[str, Any]],
                        unread: Sequence[str]) -> str:
    """The closing line of an incomplete calibration: which failures left labels out, and
    what to do about each."""
    causes = [(kind, remedy) for key, kind, _, remedy in (*_TOOL_FAILURES, _NOT_EVALUATED)
              if any((e.get("left_out") or {}).get(key) for e in calibration.values())]
    if unread:
        causes.append(_UNREAD)
    return ("callqa calibration: incomplete — not a pass: "
            f"{' and '.join(kind for kind, _ in causes)} left labels out; "
            f"{'; '.join(remedy for _, remedy in causes)}")


def outcome(calibration: Mapping[str, Mapping[str, Any]],
            min_kappa: float = DEFAULT_MIN_KAPPA, unread: Sequence[str] = ()) -> str:
    """The calibration's verdict: ``fail`` when a metric fails it (:func:`verdict`), else
    ``incomplete`` when judge errors, metric code errors, outputs the run did not evaluate or
    case files it could not read (``unread``) left labels out (:func:`incomplete`) — not a
    pass, and not the judge's disagreement either — else ``pass``."""
    if verdict(calibration, min_kappa):
        return "fail"
    return "incomplete" if incomplete(calibration, unread) else "pass"


# How the table names a left_out key whose name does not read as English.
_LEFT_OUT_NAMES = {"case_bar": "rated by the case's own bar (not the metric's bands)"}


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def left_out_text(entry: Mapping[str, Any]) -> str:
    """What a metric's entry left out of its n and why (``2 not scored, 1 judge error (of
    40 labels)``); empty when nothing was."""
    parts = [f"{count} {_LEFT_OUT_NAMES.get(kind, kind.replace('_', ' '))}"
             for kind, count in (entry.get("left_out") or {}).items() if count]
    return f"{', '.join(parts)} (of {entry.get('labels')} labels)" if parts else ""


def calibration_lines(calibration: Mapping[str, Mapping[str, Any]], *, judge: str,
                      model: str, min_kappa: float, unread: Sequence[str] = ()) -> list[str]:
    """The per-metric table printed at the end of a calibrating run, and its verdict
    (``unread``: see :func:`incomplete`)."""
    lines = [f"callqa calibration: judge {judge} against human_labels on the outputs of "
             f"{model!r} (pass: kappa >= {min_kappa:g})"]
    head = (f"{'metric':<30} {'task':<11} {'n':>4} {'left out':>9} {'agree':>6} "
            f"{'kappa':>6} {'weights':>7} {'rho':>6} {'bias':>6}")
    lines += [head, "-" * len(head)]
    for metric, e in calibration.items():
        out = e["left_out"]
        left = sum(out.values())
        lines.append(
            f"{metric:<30} {e['task']:<11} {e['n']:>4} {left:>9} {_fmt(e['agreement']):>6} "
            f"{_fmt(e['kappa']):>6} {e['weights']:>7} {_fmt(e['spearman']):>6} "
            f"{_fmt(e['bias'], 3):>6}")
    for metric, e in calibration.items():
        left_out = left_out_text(e)
        if left_out:
            lines.append(f"  {metric}: left out of n: {left_out}")
        if e.get("not_rated"):
            lines.append(f"  {metric}: not compared: {e['not_rated']}")
            continue
        cats = e["categories"]
        rows = "; ".join(f"{c}: " + " ".join(str(v) for v in row)
                         for c, row in zip(cats, e["confusion"], strict=True))
        lines.append(f"  {metric}: confusion, rows people / columns judge "
                     f"[{' '.join(cats)}]: {rows}")
    problems = verdict(calibration, min_kappa)
    gaps = incomplete(calibration, unread)
    lines += [f"callqa calibration: FAIL — {p}" for p in problems]
    lines += [f"callqa calibration: INCOMPLETE — {g}" for g in gaps]
    if gaps and not problems:
        lines.append(_incomplete_verdict(calibration, unread))
    elif not problems:
        lines.append("callqa calibration: pass — every metric the judge scored reaches "
                     f"kappa >= {min_kappa:g}")
    return lines
