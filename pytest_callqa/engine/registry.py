"""The registry of task families and their metrics: the built-in tasks plus what a run
registers (custom metrics)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

from .core.metrics import CustomMetric, CustomMetricFn, MetricSpec, TaskSpec
from .tasks.agent import AgentTask
from .tasks.conversation import ConversationTask
from .tasks.entity import EntityTask
from .tasks.extraction import ExtractionTask
from .tasks.grounding import GroundingTask
from .tasks.qa import QATask
from .tasks.text_analysis import TextTask
from .tasks.translation import TranslationTask


@dataclass
class Registry:
    tasks: dict[str, TaskSpec] = field(default_factory=dict)
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
        self.tasks[spec.name] = spec

    def register_metric(self, spec: MetricSpec, compute: CustomMetricFn) -> None:
        if spec.task not in self.tasks:
            known = ", ".join(sorted(self.tasks))
            raise ValueError(f"metric {spec.id!r}: unknown task {spec.task!r} (known: {known})")
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
        return Registry(tasks=dict(self.tasks), custom=copy.deepcopy(self.custom),
                        overrides=dict(self.overrides), origins=dict(self.origins),
                        pass_bars=dict(self.pass_bars), tolerances=dict(self.tolerances))


def builtin_tasks() -> list[TaskSpec]:
    """The built-in task families, in the scorecard's order."""
    return [QATask(), EntityTask(), TextTask(), TranslationTask(), AgentTask(),
            ConversationTask(), ExtractionTask(), GroundingTask()]


@functools.cache
def _builtin_registry() -> Registry:
    registry = Registry()
    for spec in builtin_tasks():
        registry.register_task(spec)
    return registry


def default_registry() -> Registry:
    """The built-in tasks, shared read-only; call ``.copy()`` before registering metrics."""
    return _builtin_registry()
