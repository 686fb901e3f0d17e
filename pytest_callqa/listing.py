"""The two options that print or write something instead of running tests:
``--callqa-metrics`` (every registered metric with its weight, scale, threshold, rating bands
and source, task by task) and ``--callqa-case-schema PATH`` (the case files' JSON Schema)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .engine.case_schema import case_file_schema_text
from .engine.tasks.benchmark_specs import BENCHMARK_METRICS

if TYPE_CHECKING:
    from .engine.core.metrics import MetricSpec
    from .engine.registry import Registry


def _bands(spec: MetricSpec) -> str:
    bands = spec.bands
    if bands is None:
        return "no rating bands"
    good, fine, bad = (">=", ">=", "<") if bands.higher_is_better else ("<=", "<=", ">")
    parts = [f"good {good} {bands.good:g}"]
    if bands.acceptable is not None:
        parts.append(f"acceptable {fine} {bands.acceptable:g}")
    if bands.blocker is not None:
        parts.append(f"blocker {bad} {bands.blocker:g}")
    return ", ".join(parts)


def _weight(spec: MetricSpec, registry: Registry, title: str, custom: bool) -> str:
    if custom:
        return "custom metric: reported, not weighted"
    if spec.layer == 2:
        return "Layer 2 benchmark: binarised per model into the Benchmark Score"
    if spec.weight is None:
        return "not weighted (a blocker or prerequisite)" if spec.blocker else "not weighted"
    if spec.parent is None:
        return f"weight {spec.weight:g} of the {title} score"
    try:
        parent = registry.metric(spec.task, spec.parent).name
    except KeyError:
        parent = spec.parent
    return f"weight {spec.weight:g} of {parent}"


def metric_listing(registry: Registry) -> list[str]:
    """The ``--callqa-metrics`` text: one block per task, one entry per metric."""
    sections: list[tuple[str, str, list[tuple[MetricSpec, bool]]]] = []
    for name, task in registry.tasks.items():
        own = {c.spec.id for c in registry.custom.get(name, [])}
        specs = [(spec, spec.id in own) for spec in registry.metrics_for(name)]
        sections.append((f"{task.title} task ({name})", task.title, specs))
    sections.append(("Standard benchmarks (Layer 2, optional)", "Benchmark",
                     [(spec, False) for spec in BENCHMARK_METRICS]))
    count = sum(len(specs) for _, _, specs in sections)
    lines = [f"{count} metrics registered ([!] = blocker: a breach disqualifies the model "
             "for the task)"]
    for heading, title, specs in sections:
        lines += ["", heading]
        for spec, custom in specs:
            mark = "[!] " if spec.blocker else ""
            tier = f" · tier {spec.tier}" if spec.tier else ""
            lines.append(f"  {mark}{spec.id} — {spec.name}")
            origin = registry.origin(spec.task, spec.id) if spec.task in registry.tasks \
                else "built-in"
            if custom and origin == "built-in":
                origin = "registered"
            lines.append(
                f"      {_weight(spec, registry, title, custom)} · scale {spec.scale} · "
                f"threshold {spec.threshold} ({_bands(spec)}, {origin}) · source "
                f"{spec.source}{tier}"
            )
            lines.append(f"      {spec.description}")
    return lines



def metrics_or_schema(writer: Any, registry: Registry, schema: Path | None) -> int:
    """The ``--callqa-metrics`` listing on pytest's terminal ``writer``, or (``schema``) the
    case-file schema written there: pytest's exit status (4, a usage error, when the file
    cannot be written)."""
    if schema is None:
        writer.line()
        writer.sep("=", "callqa metrics")
        for line in metric_listing(registry):
            writer.line(line)
        return 0
    text = case_file_schema_text(registry)
    try:
        schema.parent.mkdir(parents=True, exist_ok=True)
        schema.write_text(text, encoding="utf-8")
    except OSError as exc:
        writer.line(f"callqa: cannot write the case schema to {schema}: {exc.strerror}",
                    red=True)
        return 4
    writer.line(f"callqa: wrote the golden case schema to {schema}")
    return 0
