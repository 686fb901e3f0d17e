"""A report's metric definitions (``metric_specs``) read back into the registry its
scorecard was built with: the merge of shard reports, and anything else that rebuilds a
scorecard from a report, rate by the bands the run rated with, whatever the installed
built-in ones are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from ..engine.core.cases import GoldenCase
from ..engine.core.metrics import Bands, MetricSpec
from ..engine.core.results import MetricResult, TaskResult
from ..engine.registry import Registry, default_registry

# A report's key for a MetricSpec field of another name.
SPEC_KEYS = {"weight_within": "parent"}


class RecordedRegistry(Registry):
    """The built-in tasks with the metric definitions a run recorded (``metric_specs``):
    ratings of a merged scorecard follow the bands the shards rated with, whatever the
    built-in ones are."""

    def __init__(self, recorded: Mapping[str, list[MetricSpec]]) -> None:
        base = default_registry()
        super().__init__(tasks=base.tasks.copy())
        self.recorded: dict[str, list[MetricSpec]] = {}
        # A project's own metrics are registered as a run registers them; nothing computes
        # them here (the merge never evaluates an output: every value comes from a shard),
        # so their compute function refuses to run rather than make a value up.
        for task, specs in recorded.items():
            if task not in self.tasks:
                raise ValueError(f"metric_specs: task {task!r} is not a task of this "
                                 f"installation (known: {', '.join(sorted(self.tasks))})")
            builtin = {spec.id for spec in base.metrics_for(task)}
            for spec in specs:
                if spec.id not in builtin:
                    self.register_metric(spec, _not_computed)
        self.recorded = dict(recorded)

    def metrics_for(self, task: str) -> list[MetricSpec]:
        if task in self.recorded:
            return list(self.recorded[task])
        return super().metrics_for(task)


def _not_computed(case: GoldenCase, output: Any, result: TaskResult) -> MetricResult | float | None:
    raise RuntimeError("a merged report does not compute metrics: its values come from the "
                       "shard reports")



def spec_from_dict(data: Mapping[str, Any], builtin: MetricSpec | None = None) -> MetricSpec:
    """A metric definition as a report describes it (``MetricSpec.describe``), over the
    built-in one of the same id for what the report leaves out."""
    names = {f.name for f in fields(MetricSpec)}
    values: dict[str, Any] = {}
    if builtin is not None:
        values.update({name: getattr(builtin, name) for name in names})
    for key, value in data.items():
        name = SPEC_KEYS.get(key, key)
        if name in names:
            values[name] = value
    try:
        bands = values.get("bands")
        if isinstance(bands, Mapping):
            values["bands"] = Bands(**bands)
        return MetricSpec(**values)
    except TypeError as exc:
        raise ValueError(f"metric_specs: {data.get('task')}.{data.get('id')}: not a metric "
                         f"definition ({exc})") from None


def recorded_registry(metric_specs: Mapping[str, Sequence[Mapping[str, Any]]]) -> Registry:
    """The registry a report's scorecard was built with, from its ``metric_specs``."""
    base = default_registry()
    recorded: dict[str, list[MetricSpec]] = {}
    for task, specs in metric_specs.items():
        if not isinstance(specs, list) or not all(isinstance(d, Mapping) for d in specs):
            raise ValueError(f"metric_specs.{task}: not a list of metric definitions")
        builtin = ({spec.id: spec for spec in base.metrics_for(task)}
                   if task in base.tasks else {})
        recorded[task] = [spec_from_dict(d, builtin.get(str(d.get("id")))) for d in specs]
    return RecordedRegistry(recorded)
