"""Scoring model outputs against golden cases.

Evaluation runs in two phases so judge calls can be batched across many outputs:
``prepare`` parses the output, checks its structure and lists the judge requests (the task's
own and the Layer 2 benchmarks'); ``finish`` turns the judge's verdicts into a
:class:`TaskResult`. :func:`judge_batch` sends the requests of many prepared outputs as one
batch; ``evaluate``, ``evaluate_many`` and ``evaluate_corpus`` run all three. Between the
last two, :func:`prefetch_similarities` works out the text comparisons of many outputs
together (a TF-IDF fit per comparison, but one pass of array work for 64 outputs) and keeps
each output's beside it for ``finish``.
"""

from __future__ import annotations

import math
import numbers
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .core.cases import GoldenCase
from .core.context import Deferred, EvalContext, check_structure, parse_output
from .core.judging import Judge, JudgeRequest, JudgeVerdict, StreamingJudge
from .core.memo import ByIdentity, batch_memoised, in_batch_memo
from .core.metrics import BAND_EDGES, CASE_BAR, CustomMetric, MetricSpec, TaskSpec, band_edges
from .core.numbers import MAX_MAGNITUDE, measurable
from .core.results import MetricResult, TaskResult
from .registry import Registry, default_registry
from .tasks.base import BaseTask

if TYPE_CHECKING:
    from .embeddings import Embedder, FloatArray, PairKey
    from .tasks.extraction_corpus import CorpusReport


@dataclass
class Prepared:
    ctx: EvalContext
    requests: list[JudgeRequest]
    registry: Registry
    # Text comparisons scoring will ask for, worked out ahead (prefetch_similarities).
    compared: dict[PairKey, FloatArray] = field(default_factory=dict)


def _auto_embedder() -> Embedder:
    # numpy and the embedding model load with the first metric that compares texts.
    from .embeddings import get_embedder

    return get_embedder("auto")


@in_batch_memo
def prepare(
    case: GoldenCase,
    output: Any,
    *,
    embedder: Embedder | Deferred[Embedder] | None = None,
    model: str | None = None,
    run: int = 0,
    registry: Registry | None = None,
    benchmarks: bool = True,
) -> Prepared:
    """The first phase of an evaluation (module docstring). ``embedder`` may be deferred:
    it is built when a metric first needs it, which many runs never do."""
    registry = registry or default_registry()
    spec = registry.task(case.task)
    expected, config = _case_models(spec, case)
    value, problem, notes = parse_output(output)
    if problem is not None:
        parsed = None
        structure = MetricResult(value=0.0, rating="blocker", blocker=True, reason=problem)
    else:
        parsed, structure = check_structure(spec.output_model, value)
    ctx = EvalContext(
        case=case, raw_output=output, output=value, parsed=parsed, expected=expected,
        config=config, structure=structure,
        embedder_source=embedder if embedder is not None else Deferred(_auto_embedder),
        model=model, run=run, benchmarks=benchmarks, notes=notes,
    )
    if ctx.parsed is not None:
        problems = spec.output_problems(ctx)
        if problems:
            ctx.parsed = None
            ctx.structure = MetricResult(
                value=0.0, rating="blocker", blocker=True, reason="; ".join(problems),
                details={"problems": problems},
            )
    requests = spec.plan(ctx)
    if _benchmarked(spec, ctx):
        # The benchmarks' text matching and similarity load only in a run that has them.
        from .tasks.benchmarks import plan_benchmarks

        requests += plan_benchmarks(spec.name, ctx)
    if run:
        # A later run asks every judgement again, as a request of its own.
        requests = [replace(r, run=run) for r in requests]
    return Prepared(ctx=ctx, requests=requests, registry=registry)


def _case_models(spec: TaskSpec, case: GoldenCase) -> tuple[Any, Any]:
    """The case's truth and configuration as ``spec`` reads them. A built-in family's are
    frozen models, validated once per case in a batch however many models answered it; a
    project's own task spec is asked every time (its answers may not be immutable)."""
    if isinstance(spec, BaseTask):
        return _builtin_case_models(ByIdentity(spec), ByIdentity(case))
    return spec.case_models(case)


# A built-in family's validated truth and configuration of each case, kept while the case
# lives (a golden case is frozen, as the batch memo takes it): a run that scores the same
# cases batch after batch validated each one again in every batch, about 2 % of a text
# batch. Keyed by the case's id, which no other object can take while the entry's weak
# reference has not called back; at most VALIDATED_LIMIT entries, the oldest dropped first.
_VALIDATED: dict[int, tuple[weakref.ref[GoldenCase], BaseTask, tuple[Any, Any]]] = {}
VALIDATED_LIMIT = 4096


@batch_memoised
def _builtin_case_models(spec: ByIdentity[BaseTask],
                         case: ByIdentity[GoldenCase]) -> tuple[Any, Any]:
    key = id(case.value)
    found = _VALIDATED.get(key)
    if found is not None and found[0]() is case.value and found[1] is spec.value:
        return found[2]
    models = spec.value.case_models(case.value)
    if len(_VALIDATED) >= VALIDATED_LIMIT:
        _VALIDATED.pop(next(iter(_VALIDATED)), None)
    _VALIDATED[key] = (weakref.ref(case.value, lambda ref: _forget(key, ref)), spec.value,
                       models)
    return models


def _forget(key: int, ref: weakref.ref[GoldenCase]) -> None:
    """A validated case is gone: its entry goes too (not a newer one under the same id)."""
    found = _VALIDATED.get(key)
    if found is not None and found[0] is ref:
        del _VALIDATED[key]


@in_batch_memo
def finish(prepared: Prepared, verdicts: Sequence[JudgeVerdict], judge_name: str) -> TaskResult:
    ctx, registry = prepared.ctx, prepared.registry
    if prepared.compared:
        # Loaded by prefetch_similarities, which worked these out.
        from .embeddings import remember_pair_similarity

        remember_pair_similarity(ctx.embedder, prepared.compared)
    by_metric: dict[str, JudgeVerdict] = {}
    records = []
    usage: dict[str, float] = {}
    for request, verdict in zip(prepared.requests, verdicts, strict=True):
        by_metric[request.verdict_key] = verdict
        records.append(verdict.record(judge_name))
        for key, amount in verdict.usage.items():
            usage[f"judge_{key}"] = usage.get(f"judge_{key}", 0.0) + amount
    spec = registry.task(ctx.case.task)
    result = spec.score(ctx, by_metric)
    if _benchmarked(spec, ctx):
        # Loaded by prepare already, when it planned them.
        from .tasks.benchmarks import score_benchmarks

        benchmarks = score_benchmarks(spec.name, ctx, by_metric)
        if benchmarks:
            _add_metrics(result, benchmarks)
    if registry.overrides:
        _apply_overrides(result, spec, registry)
    result.pass_bar = registry.pass_bars.get(result.task)
    errors = {request.metric: verdict.reason
              for request, verdict in zip(prepared.requests, verdicts, strict=True)
              if verdict.judge_error}
    if errors or any(m.judge_error for m in result.metrics.values()):
        _mark_judge_errors(result, spec, registry, errors)
    result.model = ctx.model
    result.run = ctx.run
    result.judge_records = records
    result.usage.update(usage)
    result.notes = ctx.notes + result.notes
    _apply_custom_metrics(ctx, result, registry)
    _mark_unestimated_blockers(result, registry)
    return result


def _mark_unestimated_blockers(result: TaskResult, registry: Registry) -> None:
    """A blocker metric of a scorable output left without a value for a reason of the
    evaluation's own — the judge cannot estimate it, a custom metric returned none — may
    have fired: marked ``blocker_metric`` like a judge error's (the helpers and the scorecard
    cannot reach the run's registry, which says what blocks). One that does not apply to
    the case is decided: it cannot fire."""
    if not result.valid:
        return  # the structure check blocked it: every other metric is moot
    missing = {mid for mid, m in result.metrics.items() if not (
        m.scored or m.judge_error or m.not_applicable or "raised" in m.details)}
    if not missing:
        return  # most results: the run's definitions need not be read
    for spec in registry.metrics_for(result.task):
        if spec.blocker and spec.id in missing:
            result.metrics[spec.id].details["blocker_metric"] = True


def _benchmarked(spec: TaskSpec, ctx: EvalContext) -> bool:
    """Whether the Layer 2 benchmarks apply: to a parsed output of a built-in family (a
    project's own task spec decides its metrics alone)."""
    return ctx.benchmarks and ctx.parsed is not None and isinstance(spec, BaseTask)


def _add_metrics(result: TaskResult, metrics: Mapping[str, MetricResult]) -> None:
    """Metrics reported beside the task's own (the benchmarks): never weighted, never
    voiding, but a blocker among them still blocks."""
    result.metrics.update(metrics)
    result.blockers += [mid for mid, m in metrics.items() if m.blocker]
    result.blocked = bool(result.blockers)
    result.not_scored = sorted(mid for mid, m in result.metrics.items() if not m.scored)


def _apply_overrides(result: TaskResult, spec: TaskSpec, registry: Registry) -> None:
    """Rate the metrics a policy redefines by its definition: their ratings and blockers, and
    so the result's blockers (a new voiding blocker voids the score, as the task's own do)."""
    for mid, metric in result.metrics.items():
        override = registry.overrides.get((result.task, mid))
        if override is None:
            continue
        if metric.details.get(CASE_BAR) and override.bands is not None:
            # The case's own bar rates it; whether a rating past that bar blocks is still
            # the team's call (blocker = true or false).
            if metric.value is not None and metric.scored:
                metric.blocker = override.blocker and metric.rating in ("fail", "blocker")
                if metric.blocker or metric.rating == "blocker":
                    metric.rating = "blocker" if metric.blocker else "fail"
            continue
        # Recorded on an unscored metric too: its failure message shows the bar it missed.
        metric.details["threshold"] = override.threshold
        if metric.value is None or not metric.scored:
            continue
        metric.rating = override.rate(metric.value)
        metric.blocker = override.blocker and metric.rating == "blocker"
        metric.details[BAND_EDGES] = list(band_edges(override))
    result.blockers = [mid for mid, m in result.metrics.items() if m.blocker]
    result.blocked = bool(result.blockers)
    voided = [mid for mid in result.blockers if mid in getattr(spec, "voiding", ())]
    if voided and result.score is not None:
        result.notes.append(f"score void (invalid) because of blocker: {', '.join(voided)}; "
                            f"it would have been {result.score:.3f}")
        result.score, result.valid = None, False


def _mark_judge_errors(result: TaskResult, spec: TaskSpec, registry: Registry,
                       errors: Mapping[str, str]) -> None:
    """Metrics the judge could not score become *not scored — judge error*, and so does every
    metric computed from them (a parent score, the task's overall aggregates). When a metric
    weighted into the task score is among them the task score is unknown: it is not
    renormalised around the gap, since that would report a number the judge never gave.
    Those are the metrics of the failed requests, and those the task itself marked as judge
    errors (a metric computed from some failed per-turn verdicts among good ones)."""
    own = {m.id: m for m in registry.metrics_for(result.task)}
    affected = {mid: f"judge error: {m.reason}" for mid, m in result.metrics.items()
                if m.judge_error}
    for mid, reason in errors.items():
        affected.setdefault(mid, f"judge error: {reason}")
    for request_metric, reason in errors.items():
        if request_metric not in own:
            # A request that feeds several metrics at once (a combined per-turn judgement):
            # the judge-scored metrics it left without a value are its.
            for mid, metric in own.items():
                found = result.metrics.get(mid)
                if "judge" in metric.source and found is not None and not found.scored:
                    affected.setdefault(mid, f"judge error: {reason}")
    grew = True
    while grew:
        grew = False
        for mid in list(affected):
            parent = own[mid].parent if mid in own else None
            if parent is not None and parent not in affected:
                affected[parent] = f"judge error: computed from {mid}, which the judge could " \
                                   "not score"
                grew = True
    # Only metrics weighted into the task score make it unknown; supplementary ones (the
    # extraction rubrics, the benchmarks) are reported apart from it.
    task_own = [mid for mid in affected if mid in own and own[mid].weight is not None]
    if task_own:
        for mid in getattr(spec, "aggregate_metrics", ()):
            affected.setdefault(mid, f"judge error: computed from {', '.join(task_own)}, "
                                     "which the judge could not score")
    for mid, reason in affected.items():
        if mid in result.metrics:
            details = result.metrics[mid].details
            if mid in own and own[mid].blocker:
                # The assertion helpers cannot reach the run's registry: what they need of
                # its definition (its policy's) is whether this unknown verdict could block.
                details = {**details, "blocker_metric": True}
            result.metrics[mid] = MetricResult.judge_failed(reason, **details)
    result.judge_errors = sorted(mid for mid in affected if mid in result.metrics)
    result.blockers = [mid for mid in result.blockers if mid not in affected]
    result.blocked = bool(result.blockers)
    result.not_scored = sorted(mid for mid, m in result.metrics.items() if not m.scored)
    voided = any(mid in getattr(spec, "voiding", ()) for mid in result.blockers)
    if task_own and not voided:
        # Unknown, not invalid: no prerequisite failed, the judge did.
        result.score = None
        result.valid = True
        result.renormalised = False
        result.notes = [n for n in result.notes
                        if not n.startswith(("weights renormalised", "no metric of this task"))]
        result.notes.append("task score unknown: the judge could not score "
                            f"{', '.join(sorted(task_own))} (a judge error, not a model failure)")


def _apply_custom_metrics(ctx: EvalContext, result: TaskResult, registry: Registry) -> None:
    for custom in registry.custom.get(ctx.case.task, []):
        # The run's definition of the metric: its policy's, when it has one.
        spec = registry.overrides.get((ctx.case.task, custom.spec.id), custom.spec)
        metric = _custom_result(ctx, result, custom, spec)
        # The assertion helpers know no custom metric's definition: the bar it is held to
        # goes with it, for their failure messages.
        metric.details["threshold"] = spec.threshold
        if metric.scored and spec.bands is not None:
            metric.details[BAND_EDGES] = list(spec.bands.edges)
        result.metrics[spec.id] = metric
        if metric.judge_error:
            result.judge_errors = sorted({*result.judge_errors, spec.id})
        if metric.blocker:
            result.blocked = True
            result.blockers.append(spec.id)


def _custom_result(ctx: EvalContext, result: TaskResult, custom: CustomMetric,
                   spec: MetricSpec) -> MetricResult:
    try:
        value = custom.compute(ctx.case, ctx.output, result)
    except Exception as exc:  # a user's metric must not take the whole evaluation down
        if result.judge_errors:
            # It may have read a value the judge left unknown (the task score is None).
            return _unknown_custom(result, spec, f"raised {type(exc).__name__}: {exc}")
        # What the assertion helpers need to report it as an error of the evaluation: that
        # it raised, and whether it could have blocked.
        marks: dict[str, Any] = {"raised": type(exc).__name__}
        if spec.blocker:
            marks["blocker_metric"] = True
        return MetricResult.not_scored(f"custom metric raised {type(exc).__name__}: {exc}",
                                       **marks)
    number, problem = _custom_number(value.value if isinstance(value, MetricResult) else value)
    if problem is not None:
        # The metric's code is at fault, as when it raises, not the judge abstaining: marked
        # ``returned`` as a raise is ``raised`` (a calibration counts either a code error).
        return MetricResult.not_scored(f"custom metric returned {problem}", returned=problem)
    if number is None and result.judge_errors:
        return _unknown_custom(result, spec, "returned no value")
    if not isinstance(value, MetricResult):
        if number is None:
            return MetricResult.not_scored("not scored: the custom metric returned no value")
        return spec.result(number)
    value.value = number
    # A rating the metric gave itself stands, unless the team's policy redefines the metric.
    if number is not None and (value.rating is None or spec is not custom.spec):
        value.rating = spec.rate(number)
        value.blocker = value.rating == "blocker"
    return value


def _unknown_custom(result: TaskResult, spec: MetricSpec, what: str) -> MetricResult:
    """A custom metric that gave no value for a result the judge could not wholly score: a
    judge error too (it may have read what the judge left unknown), never a model failure."""
    details: dict[str, Any] = {}
    if spec.blocker:
        # Whether this unknown verdict could block, for assert_no_blockers.
        details["blocker_metric"] = True
    return MetricResult.judge_failed(
        f"judge error: the custom metric {what} while the judge could not score "
        f"{', '.join(result.judge_errors)}", **details)


def _custom_number(returned: object) -> tuple[float | None, str | None]:
    """The value a custom metric returned as a float (None: not scored), or why it is no
    number: any real number is one, numpy's scalars included, but not a truth value."""
    if returned is None:
        return None, None
    if isinstance(returned, bool):
        # Python counts True as 1, but a check's outcome is not a score on the metric's scale.
        return None, f"{returned!r}, a truth value, not a number: return 1.0 or 0.0"
    if not isinstance(returned, numbers.Real):
        return None, f"{returned!r}, not a finite number"
    try:
        number = float(returned)
    except OverflowError:
        return None, "a number too large for a float, not a finite number"
    if not math.isfinite(number):
        # NaN compares false with every bound, so an assertion on it could never fail.
        return None, f"{returned!r}, not a finite number"
    if not measurable(number):
        # Two of them summed to infinity in the scorecard's mean: the report, which JSON
        # writes, was lost at the end of the run.
        return None, f"{returned!r}, beyond {MAX_MAGNITUDE:g} either side of zero"
    return number, None


@in_batch_memo
def judge_batch(judge: Judge, prepared: Sequence[Prepared]) -> list[list[JudgeVerdict]]:
    """Every request of ``prepared`` sent to ``judge`` as one batch, the verdicts split back
    per prepared output."""
    requests = [r for p in prepared for r in p.requests]
    verdicts = judge.judge(requests) if requests else []
    return _split(judge, prepared, requests, verdicts)


def judge_batch_as_ready(judge: StreamingJudge, prepared: Sequence[Prepared],
                         on_ready: Callable[[int, list[JudgeVerdict]], None],
                         ) -> list[list[JudgeVerdict]]:
    """:func:`judge_batch`, also handing ``on_ready(index, verdicts)`` each prepared output's
    verdicts as soon as the last of them is in (on the thread that runs the batch), once
    per output and exactly as the batch returns them: a judgement asked twice in the batch
    is charged to its first asker, as :meth:`Judge.judge` does."""
    requests = [r for p in prepared for r in p.requests]
    # Each request's key (a content hash, worked out once here), which outputs each key
    # completes, and where each key is first asked.
    keys = [[r.key for r in p.requests] for p in prepared]
    waiting: dict[str, list[int]] = {}
    missing: list[set[str]] = []
    first: dict[str, tuple[int, int]] = {}
    for index, own in enumerate(keys):
        missing.append(set(own))
        for key in missing[-1]:
            waiting.setdefault(key, []).append(index)
        for position, key in enumerate(own):
            first.setdefault(key, (index, position))
    known: dict[str, JudgeVerdict] = {}

    def ready(index: int) -> None:
        on_ready(index, [known[key] if first[key] == (index, position)
                         else replace(known[key], usage={})
                         for position, key in enumerate(keys[index])])

    def arrived(new: Mapping[str, JudgeVerdict]) -> None:
        known.update(new)
        for key in new:
            for index in waiting.pop(key, ()):
                missing[index].discard(key)
                if not missing[index]:
                    ready(index)

    for index, left in enumerate(missing):
        if not left:
            ready(index)
    verdicts = judge.judge_as_ready(requests, arrived) if requests else []
    return _split(judge, prepared, requests, verdicts)


def _split(judge: Judge, prepared: Sequence[Prepared], requests: list[JudgeRequest],
           verdicts: list[JudgeVerdict]) -> list[list[JudgeVerdict]]:
    if len(verdicts) != len(requests):
        raise RuntimeError(
            f"judge {judge.name!r} answered {len(verdicts)} of {len(requests)} requests")
    split, offset = [], 0
    for p in prepared:
        split.append(list(verdicts[offset:offset + len(p.requests)]))
        offset += len(p.requests)
    return split


@in_batch_memo
def evaluate_many(
    items: Sequence[tuple[GoldenCase, Any, str | None]],
    *,
    judge: Judge | None = None,
    embedder: Embedder | None = None,
    registry: Registry | None = None,
    benchmarks: bool = True,
) -> list[TaskResult]:
    """Evaluate ``(case, output, model)`` triples, sending all judge requests as one batch."""
    embedder = embedder or _auto_embedder()
    if judge is None:
        # The heuristic judge reads every family's outputs: imported only when it judges.
        from .judges.heuristic import HeuristicJudge

        judge = HeuristicJudge(embedder=embedder)
    prepared = [
        prepare(case, output, embedder=embedder, model=model, registry=registry,
                benchmarks=benchmarks)
        for case, output, model in items
    ]
    verdicts = judge_batch(judge, prepared)
    prefetch_similarities(prepared)
    return [finish(p, answered, judge.name)
            for p, answered in zip(prepared, verdicts, strict=True)]


# Outputs whose text comparisons are worked out in one pass: enough to spread the array
# work's per-call cost, few enough that the pass's vectors stay a few MB.
SIMILARITY_CHUNK = 64


def prefetch_similarities(prepared: Sequence[Prepared]) -> None:
    """Work out ahead the text comparisons that finishing ``prepared`` will ask for, in one
    pass per embedder and ``SIMILARITY_CHUNK`` outputs (``embeddings.compare_pairs``), and
    keep each output's beside it (``Prepared.compared``) for ``finish`` to hand to
    ``pair_similarity``. An output whose task is not a built-in family, or whose embedder
    gains nothing from it, compares its texts as it scores."""
    for start in range(0, len(prepared), SIMILARITY_CHUNK):
        _prefetch_chunk(prepared[start:start + SIMILARITY_CHUNK])


def _prefetch_chunk(prepared: Sequence[Prepared]) -> None:
    wanted: dict[int, tuple[Embedder, list[tuple[Prepared, list[PairKey]]]]] = {}
    for p in prepared:
        ctx = p.ctx
        spec = p.registry.task(ctx.case.task)
        if ctx.parsed is None or not isinstance(spec, BaseTask):
            continue
        pairs = spec.similarity_pairs(ctx)
        if _benchmarked(spec, ctx):
            # Loaded by prepare already, when it planned them.
            from .tasks.benchmarks import similarity_pairs

            pairs += similarity_pairs(spec.name, ctx)
        if pairs:
            embedder = ctx.embedder
            keys = [(tuple(a), tuple(b)) for a, b in pairs]
            wanted.setdefault(id(embedder), (embedder, []))[1].append((p, keys))
    if not wanted:
        return
    # Loaded already, by the task modules that listed the comparisons.
    from .embeddings import compare_pairs

    for embedder, outputs in wanted.values():
        answers = compare_pairs(embedder, [key for _, keys in outputs for key in keys])
        for p, keys in outputs:
            p.compared = {key: answers[key] for key in keys if key in answers}


def evaluate(
    case: GoldenCase,
    output: Any,
    *,
    judge: Judge | None = None,
    embedder: Embedder | None = None,
    model: str | None = None,
    registry: Registry | None = None,
    benchmarks: bool = True,
) -> TaskResult:
    """Score one model output (a dict, or the raw text the model returned) for one case.

    A bad output never raises: non-JSON text or a wrong structure gives
    ``response_structure_compliance = 0`` and an invalid result.
    """
    return evaluate_many(
        [(case, output, model)], judge=judge, embedder=embedder, registry=registry,
        benchmarks=benchmarks,
    )[0]


def evaluate_corpus(
    items: Sequence[tuple[GoldenCase, Any]] | Sequence[tuple[GoldenCase, Any, str | None]],
    *, judge: Judge | None = None, embedder: Embedder | None = None,
) -> CorpusReport:
    """Evaluate ``(case, output[, model])`` extraction pairs and aggregate the corpus."""
    # The corpus aggregation (and the extraction family) loads only for a corpus.
    from .tasks.extraction_corpus import aggregate_corpus

    triples = [(item[0], item[1], item[2] if len(item) > 2 else None) for item in items]
    return aggregate_corpus(evaluate_many(triples, judge=judge, embedder=embedder,
                                          benchmarks=False))
