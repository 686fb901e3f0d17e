"""Scoring model outputs against golden cases.

Evaluation runs in two phases so judge calls can be batched across many outputs:
``prepare`` parses the output, checks its structure and lists the judge requests;
``finish`` turns the judge's verdicts into a :class:`TaskResult`. ``evaluate`` and
``evaluate_many`` run both phases with one judge batch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from .cases import GoldenCase, validation_problems
from .results import MetricResult, TaskResult

if TYPE_CHECKING:
    from .embeddings import Embedder
    from .judges.base import Judge, JudgeRequest, JudgeVerdict
    from .registry import Registry

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)\n?```$", re.DOTALL)
STRUCTURE = "response_structure_compliance"


@dataclass
class EvalContext:
    """Everything a task needs to plan and score one output."""

    case: GoldenCase
    raw_output: Any
    output: Any
    parsed: BaseModel | None
    expected: BaseModel
    config: BaseModel
    structure: MetricResult
    embedder: Embedder
    model: str | None = None
    run: int = 0
    benchmarks: bool = True
    notes: list[str] = field(default_factory=list)


@dataclass
class Prepared:
    ctx: EvalContext
    requests: list[JudgeRequest]
    registry: Registry


def parse_output(raw: Any) -> tuple[Any, str | None, list[str]]:
    """Turn what a model returned into a JSON value.

    Returns ``(value, problem, notes)``; ``problem`` says why the output is not JSON. A reply
    wrapped in one Markdown code fence is unwrapped (and noted), as chat models often do that.
    """
    notes: list[str] = []
    if isinstance(raw, (dict, list)):
        return raw, None, notes
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, "output is not UTF-8 text", notes
    if not isinstance(raw, str):
        kind = type(raw).__name__
        return None, f"output of type {kind} is neither JSON text nor an object", notes
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group("body").strip()
        notes.append("output was wrapped in a Markdown code fence; the fence was removed")
    if not text:
        return None, "output is empty", notes
    try:
        return json.loads(text), None, notes
    except json.JSONDecodeError as exc:
        preview = text[:60].replace("\n", " ")
        return None, f"output is not valid JSON ({exc.msg} at char {exc.pos}): {preview!r}", notes


def check_structure(
    model_cls: type[BaseModel], value: Any
) -> tuple[BaseModel | None, MetricResult]:
    """Validate ``value`` strictly against a task's output model (SPEC 5.1)."""
    if not isinstance(value, dict):
        kind = "nothing" if value is None else type(value).__name__
        result = MetricResult(
            value=0.0, rating="blocker", blocker=True,
            reason=f"output must be a JSON object, got {kind}",
        )
        return None, result
    try:
        parsed = model_cls.model_validate(value, strict=True)
    except ValidationError as exc:
        problems = validation_problems(exc)
        more = f" (+{len(problems) - 6} more)" if len(problems) > 6 else ""
        return None, MetricResult(
            value=0.0, rating="blocker", blocker=True,
            reason="; ".join(problems[:6]) + more, details={"problems": problems},
        )
    ok = MetricResult(value=1.0, rating="good", reason="structure matches the task schema")
    return parsed, ok


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
    from .embeddings import get_embedder
    from .registry import default_registry

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
    return Prepared(ctx=ctx, requests=spec.plan(ctx), registry=registry)


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
    result = registry.task(ctx.case.task).score(ctx, by_metric)
    result.model = ctx.model
    result.run = ctx.run
    result.judge_records = records
    result.usage.update(usage)
    result.notes = ctx.notes + result.notes
    _apply_custom_metrics(ctx, result, registry)
    return result


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


def evaluate_many(
    items: Sequence[tuple[GoldenCase, Any, str | None]],
    *,
    judge: Judge | None = None,
    embedder: Embedder | None = None,
    registry: Registry | None = None,
    benchmarks: bool = True,
) -> list[TaskResult]:
    """Evaluate ``(case, output, model)`` triples, sending all judge requests as one batch."""
    from .embeddings import get_embedder
    from .judges.heuristic import HeuristicJudge

    embedder = embedder or get_embedder("auto")
    judge = judge or HeuristicJudge(embedder=embedder)
    prepared = [
        prepare(case, output, embedder=embedder, model=model, registry=registry,
                benchmarks=benchmarks)
        for case, output, model in items
    ]
    requests = [r for p in prepared for r in p.requests]
    verdicts = judge.judge(requests) if requests else []
    if len(verdicts) != len(requests):
        raise RuntimeError(
            f"judge {judge.name!r} answered {len(verdicts)} of {len(requests)} requests"
        )
    results = []
    offset = 0
    for p in prepared:
        n = len(p.requests)
        results.append(finish(p, verdicts[offset:offset + n], judge.name))
        offset += n
    return results


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

