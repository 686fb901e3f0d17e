"""The registry of task families and their metrics: the built-in tasks plus what a run
registers (custom metrics)."""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from .core.metrics import TASK_SCORE_ID, CustomMetric, CustomMetricFn, MetricSpec, TaskSpec
from .tasks.benchmark_specs import BENCHMARK_IDS

# The built-in families by task name, in the scorecard's order: the module below ``tasks``
# and the class. A family is imported when a run first needs it, so a suite of QA cases
# never loads the agent family's schemas or the text tools and numpy behind them.
BUILTIN_FAMILIES: dict[str, tuple[str, str]] = {
    "qa": ("qa", "QATask"),
    "entity": ("entity", "EntityTask"),
    "text": ("text_analysis", "TextTask"),
    "translation": ("translation", "TranslationTask"),
    "agent": ("agent", "AgentTask"),
    "conversation": ("conversation", "ConversationTask"),
    "extraction": ("extraction", "ExtractionTask"),
    "grounding": ("grounding", "GroundingTask"),
}


@functools.cache
def builtin_task(name: str) -> TaskSpec:
    """The built-in family ``name``, imported on the first call and shared after it."""
    module, cls = BUILTIN_FAMILIES[name]
    spec: TaskSpec = getattr(importlib.import_module(f"{__package__}.tasks.{module}"), cls)()
    return spec


class TaskTable(Mapping[str, TaskSpec]):
    """Task name -> family, in registration order; a built-in family is held by name until
    it is first looked up."""

    def __init__(self, entries: Mapping[str, TaskSpec | None] | None = None) -> None:
        self._entries: dict[str, TaskSpec | None] = dict(entries or {})

    def __getitem__(self, name: str) -> TaskSpec:
        spec = self._entries[name]
        if spec is None:
            spec = self._entries[name] = builtin_task(name)
        return spec

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def add(self, spec: TaskSpec) -> None:
        self._entries[spec.name] = spec

    def copy(self) -> TaskTable:
        return TaskTable(self._entries)


@dataclass
class Registry:
    tasks: TaskTable = field(default_factory=TaskTable)
    custom: dict[str, list[CustomMetric]] = field(default_factory=dict)
    # A team's own definition of a metric (its policy), by (task, metric id), and where each
    # came from: what every rating, blocker and listing of the run uses instead.
    overrides: dict[tuple[str, str], MetricSpec] = field(default_factory=dict)
    origins: dict[tuple[str, str], str] = field(default_factory=dict)
    # A policy's task pass bars (the assertion helpers' default minimum score) and its
    # per-metric regression tolerances for the baseline gate, keyed "task.metric".
    pass_bars: dict[str, float] = field(default_factory=dict)
    tolerances: dict[str, float] = field(default_factory=dict)

    def register_task(self, spec: TaskSpec) -> None:
        if spec.name in self.tasks:
            raise ValueError(f"task {spec.name!r} is already registered")
        for metric in spec.metrics:
            if metric.id in BENCHMARK_IDS:
                raise ValueError(f"task {spec.name!r}: {_benchmark_clash(metric.id)}")
            if metric.id == TASK_SCORE_ID:
                raise ValueError(f"task {spec.name!r}: {_task_score_clash()}")
        self.tasks.add(spec)

    def register_metric(self, spec: MetricSpec, compute: CustomMetricFn) -> None:
        if spec.task not in self.tasks:
            known = ", ".join(sorted(self.tasks))
            raise ValueError(f"metric {spec.id!r}: unknown task {spec.task!r} (known: {known})")
        if spec.id in BENCHMARK_IDS:
            raise ValueError(_benchmark_clash(spec.id))
        if spec.id == TASK_SCORE_ID:
            raise ValueError(_task_score_clash())
        if any(m.id == spec.id for m in self.metrics_for(spec.task)):
            raise ValueError(f"metric {spec.id!r} is already registered for task {spec.task!r}")
        self.custom.setdefault(spec.task, []).append(CustomMetric(spec, compute))

    def task(self, name: str) -> TaskSpec:
        try:
            return self.tasks[name]
        except KeyError:
            known = ", ".join(sorted(self.tasks))
            raise KeyError(f"unknown task {name!r} (known: {known})") from None

    def metrics_for(self, task: str) -> list[MetricSpec]:
        own = list(self.task(task).metrics) + [c.spec for c in self.custom.get(task, [])]
        return [self.overrides.get((task, spec.id), spec) for spec in own]

    def override(self, spec: MetricSpec, origin: str) -> None:
        """Use ``spec`` for its metric from now on (a policy's thresholds and blockers)."""
        self.metric(spec.task, spec.id)
        self.overrides[(spec.task, spec.id)] = spec
        self.origins[(spec.task, spec.id)] = origin

    def origin(self, task: str, metric_id: str) -> str:
        """Where the metric's effective definition comes from."""
        return self.origins.get((task, metric_id), "built-in")

    def metric(self, task: str, metric_id: str) -> MetricSpec:
        for spec in self.metrics_for(task):
            if spec.id == metric_id:
                return spec
        raise KeyError(f"task {task!r} has no metric {metric_id!r}")

    def all_metrics(self) -> Iterable[MetricSpec]:
        for name in self.tasks:
            yield from self.metrics_for(name)

    def copy(self) -> Registry:
        """An independent registry (custom metrics of one session must not leak into another)."""
        return Registry(tasks=self.tasks.copy(), custom=copy.deepcopy(self.custom),
                        overrides=dict(self.overrides), origins=dict(self.origins),
                        pass_bars=dict(self.pass_bars), tolerances=dict(self.tolerances))


def _task_score_clash() -> str:
    # The baseline gate and the reports' per-metric keys call a task's score "score": a
    # metric of that id was gated as the task score, with its own direction and tolerance.
    return (f"metric id {TASK_SCORE_ID!r} is the task score's name in the gate and the "
            "reports; give the metric another id")


def _benchmark_clash(metric_id: str) -> str:
    # A result holds one value per metric id, and the Benchmark Score reads the benchmarks'
    # ids in every result: a metric of the same id would replace the benchmark's value.
    return f"metric {metric_id!r} is already registered as a built-in benchmark (Layer 2)"


def builtin_tasks() -> list[TaskSpec]:
    """The built-in task families, in the scorecard's order (every one imported)."""
    return [builtin_task(name) for name in BUILTIN_FAMILIES]


@functools.cache
def _builtin_registry() -> Registry:
    return Registry(tasks=TaskTable(dict.fromkeys(BUILTIN_FAMILIES)))


def default_registry() -> Registry:
    """The built-in tasks, shared read-only; call ``.copy()`` before registering metrics."""
    return _builtin_registry()
