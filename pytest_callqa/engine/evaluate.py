"""Scoring model outputs against golden cases.

Evaluation runs in two phases so judge calls can be batched across many outputs:
``prepare`` parses the output, checks its structure and lists the judge requests (the task's
own and the Layer 2 benchmarks'); ``finish`` turns the judge's verdicts into a
:class:`TaskResult`. :func:`judge_batch` sends the requests of many prepared outputs as one
batch; ``evaluate``, ``evaluate_many`` and ``evaluate_corpus`` run all three.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .core.cases import GoldenCase
from .core.context import EvalContext, check_structure, parse_output
from .core.judging import Judge, JudgeRequest, JudgeVerdict
from .core.results import MetricResult, TaskResult
from .embeddings import Embedder, get_embedder
from .judges.heuristic import HeuristicJudge
from .registry import Registry, default_registry
from .tasks.benchmarks import plan_benchmarks, score_benchmarks
from .tasks.extraction_corpus import CorpusReport, aggregate_corpus


@dataclass
class Prepared:
    ctx: EvalContext
    requests: list[JudgeRequest]
    registry: Registry


def prepare(
    case: GoldenCase,
    output: Any,
    *,
    embedder: Embedder | None = None,
    model: str | None = None,
    run: int = 0,
    registry: Registry | None = None,
    benchmarks: bool = True,
) -> Prepared:
    registry = registry or default_registry()
    spec = registry.task(case.task)
    expected, config = spec.case_models(case)
    value, problem, notes = parse_output(output)
    if problem is not None:
        parsed = None
        structure = MetricResult(value=0.0, rating="blocker", blocker=True, reason=problem)
    else:
        parsed, structure = check_structure(spec.output_model, value)
    ctx = EvalContext(
        case=case, raw_output=output, output=value, parsed=parsed, expected=expected,
        config=config, structure=structure, embedder=embedder or get_embedder("auto"),
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
    if ctx.benchmarks and ctx.parsed is not None:
        requests += plan_benchmarks(spec.name, ctx)
    return Prepared(ctx=ctx, requests=requests, registry=registry)


def finish(prepared: Prepared, verdicts: Sequence[JudgeVerdict], judge_name: str) -> TaskResult:
    ctx, registry = prepared.ctx, prepared.registry
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
    if ctx.benchmarks and ctx.parsed is not None:
        _add_metrics(result, score_benchmarks(spec.name, ctx, by_metric))
    result.model = ctx.model
    result.run = ctx.run
    result.judge_records = records
    result.usage.update(usage)
    result.notes = ctx.notes + result.notes
    _apply_custom_metrics(ctx, result, registry)
    return result


def _add_metrics(result: TaskResult, metrics: Mapping[str, MetricResult]) -> None:
    """Metrics reported beside the task's own (the benchmarks): never weighted, never
    voiding, but a blocker among them still blocks."""
    result.metrics.update(metrics)
    result.blockers += [mid for mid, m in metrics.items() if m.blocker]
    result.blocked = bool(result.blockers)
    result.not_scored = sorted(mid for mid, m in result.metrics.items() if not m.scored)


def _apply_custom_metrics(ctx: EvalContext, result: TaskResult, registry: Registry) -> None:
    for custom in registry.custom.get(ctx.case.task, []):
        try:
            value = custom.compute(ctx.case, ctx.output, result)
        except Exception as exc:  # a user's metric must not take the whole evaluation down
            result.metrics[custom.spec.id] = MetricResult(
                value=None, scored=False, flagged=True,
                reason=f"custom metric raised {type(exc).__name__}: {exc}",
            )
            continue
        if isinstance(value, MetricResult):
            if value.rating is None and value.value is not None:
                value.rating = custom.spec.rate(value.value)
                value.blocker = value.rating == "blocker"
            result.metrics[custom.spec.id] = value
        else:
            result.metrics[custom.spec.id] = custom.spec.result(value)
        if result.metrics[custom.spec.id].blocker:
            result.blocked = True
            result.blockers.append(custom.spec.id)


def judge_batch(judge: Judge, prepared: Sequence[Prepared]) -> list[list[JudgeVerdict]]:
    """Every request of ``prepared`` sent to ``judge`` as one batch, the verdicts split back
    per prepared output."""
    requests = [r for p in prepared for r in p.requests]
    verdicts = judge.judge(requests) if requests else []
    if len(verdicts) != len(requests):
        raise RuntimeError(
            f"judge {judge.name!r} answered {len(verdicts)} of {len(requests)} requests")
    split, offset = [], 0
    for p in prepared:
        split.append(list(verdicts[offset:offset + len(p.requests)]))
        offset += len(p.requests)
    return split


def evaluate_many(
    items: Sequence[tuple[GoldenCase, Any, str | None]],
    *,
    judge: Judge | None = None,
    embedder: Embedder | None = None,
    registry: Registry | None = None,
    benchmarks: bool = True,
) -> list[TaskResult]:
    """Evaluate ``(case, output, model)`` triples, sending all judge requests as one batch."""
    embedder = embedder or get_embedder("auto")
    judge = judge or HeuristicJudge(embedder=embedder)
    prepared = [
        prepare(case, output, embedder=embedder, model=model, registry=registry,
                benchmarks=benchmarks)
        for case, output, model in items
    ]
    return [finish(p, verdicts, judge.name)
            for p, verdicts in zip(prepared, judge_batch(judge, prepared), strict=True)]


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
    triples = [(item[0], item[1], item[2] if len(item) > 2 else None) for item in items]
    return aggregate_corpus(evaluate_many(triples, judge=judge, embedder=embedder,
                                          benchmarks=False))
