"""What a run reports at its end, on the controller (or the only process): the results
tests attached to their reports, the scorecard, the header above it and the JSON report."""

from __future__ import annotations

import platform
import time
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from .._version import __version__
from .settings import CallqaUsageError, Settings, count

if TYPE_CHECKING:
    from ..engine.core.results import TaskResult
    from ..engine.scorecard import Scorecard
    from .catalog import Catalog
    from .host import Host
    from .services import Services
    from .usage import Usage

REPORT_SCHEMA = "callqa-report/1"
# How much of each transcript the report carries for a reader (the HTML drill-down).
EXCERPT_TURNS = 12
EXCERPT_CHARS = 300


class Summary:
    """Gathers one payload per test id and turns them into the scorecard and the report."""

    def __init__(self, settings: Settings, host: Host, catalog: Catalog, services: Services,
                 usage: Usage) -> None:
        self.settings = settings
        self.catalog = catalog
        self.host = host
        self.services = services
        self.usage = usage
        self.started_at = datetime.now(UTC)
        self._started = time.monotonic()
        self.collected: dict[str, dict[str, Any]] = {}
        self._scorecard: Scorecard | None = None


    def record(self, nodeid: str, payload: dict[str, Any]) -> None:
        self.collected[nodeid] = payload

    def results(self) -> list[TaskResult]:
        """One result per (model, case, run), whichever tests and workers scored it."""
        # Results are rebuilt only at the end of a run that evaluated something.
        from ..engine.core.results import TaskResult

        unique: dict[tuple[str | None, str, int], TaskResult] = {}
        for nodeid in sorted(self.collected):
            payload = self.collected[nodeid]
            data = payload.get("result")
            if data is None:
                continue
            # A test over repeated runs carries every run and whether it passed each.
            passed = payload.get("passed") or []
            for index, entry in enumerate([data, *payload.get("runs", [])]):
                result = TaskResult.from_dict(entry)
                if index < len(passed):
                    result.passed = bool(passed[index])
                key = (result.model, result.case_id, result.run)
                kept = unique.setdefault(key, result)
                if kept is not result and result.passed is not None:
                    # A run passes when every test of the pair passed it.
                    kept.passed = result.passed if kept.passed is None \
                        else kept.passed and result.passed
        return list(unique.values())

    def model_order(self, card: Scorecard) -> list[str]:
        """The scorecard's models in the configured order (models the hook added last)."""
        try:
            configured = self.catalog.models()
        except CallqaUsageError:
            configured = []
        return [m for m in configured if m in card.models] + [
            m for m in card.models if m not in configured]

    def outputs(self) -> dict[tuple[str | None, str], Any]:
        """What each model answered, by (model, case id), as the tests recorded it."""
        found: dict[tuple[str | None, str], Any] = {}
        for nodeid in sorted(self.collected):
            payload = self.collected[nodeid]
            result = payload.get("result")
            if result is not None and "output" in payload:
                found.setdefault((result.get("model"), result["case_id"]), payload["output"])
        return found

    def golden_cases(self, card: Scorecard) -> dict[str, Any]:
        """The golden cases behind the results, for a reader of the report: the expected
        outcome and the first turns of the transcript, numbered."""
        wanted = {r.case_id for r in card.results}
        if not wanted:
            return {}
        found = {}
        for case in self.catalog.files().cases:
            if case.id in wanted:
                turns = [f"turn {i}: {t.speaker + ': ' if t.speaker else ''}"
                         f"{t.text[:EXCERPT_CHARS]}"
                         for i, t in enumerate(case.transcript[:EXCERPT_TURNS])]
                found[case.id] = {"task": case.task, "transcript_excerpt": turns,
                                  "turns": len(case.transcript),
                                  "expected_outcome": case.expected_outcome}
        return found

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
            # The scorecard loads only in a run that evaluated something.
            from ..engine.scorecard import build_scorecard

            card = build_scorecard(self.results(), registry=self.services.registry(),
                                   disqualify_tolerance=self.settings.disqualify_tolerance)
            self.host.post_process(card)
            self._scorecard = card
        return self._scorecard

    def header(self, card: Scorecard) -> list[str]:
        """What was run and what was not scored, printed above the table."""
        results = card.results
        cases = {(r.task, r.case_id) for r in results}
        lines = [
            f"judge: {self.services.judge_description()}",
            *self.usage.lines(card),
            f"embeddings: {self.services.embedder().description}",
            f"results: {count(len(results), 'output')} scored "
            f"({count(len(card.models), 'model')}, {count(len(cases), 'case')})",
        ]
        errors = [rec for r in results for rec in r.judge_records if rec.get("judge_error")]
        if errors:
            incomplete = sum(1 for r in results if r.incomplete)
            lines.append(f"judge errors: {count(len(errors), 'verdict')} the judge could not "
                         f"give (shown as E); {count(incomplete, 'output')} left out of task "
                         "scores, and the tests that needed them reported as errors, not "
                         "as model failures")
        lines += self._repeat_lines(card)
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
        # The benchmark definitions load with the task families they read.
        from ..engine.tasks.benchmarks import BENCHMARK_METRICS

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

    def judge_repeats(self, card: Scorecard) -> dict[str, Any] | None:
        """The judge's test-retest agreement per metric, when it was asked more than once."""
        if self.settings.judge_repeats < 2 or not self.settings.llm_judge:
            return None
        # Loaded with the repeated judge already.
        from ..engine.judges.repeats import repeat_agreement

        return {"repeats": self.settings.judge_repeats,
                "tolerance": self.settings.judge_repeat_tolerance,
                "metrics": repeat_agreement(card.results)}

    def _repeat_lines(self, card: Scorecard) -> list[str]:
        lines = []
        summaries = [s for c in card.models.values() if (s := c.runs_summary()) is not None]
        if summaries:
            flaky = sum(len(s["flaky"]) for s in summaries)
            lines.append(f"runs: up to {max(s['runs'] for s in summaries)} per (model, case), "
                         f"pass rule {self.settings.pass_rule}; {count(flaky, 'flaky case')} "
                         "(runs disagree)")
        return lines + self._judge_repeat_lines(card)

    def _judge_repeat_lines(self, card: Scorecard) -> list[str]:
        if self.settings.judge_repeats > 1 and not self.settings.llm_judge:
            return [f"judge repeats: {self.settings.judge_repeats} asked, none made: the "
                    f"{self.settings.judge} judge is deterministic"]
        found = self.judge_repeats(card)
        if found is None:
            return []
        metrics = found["metrics"]
        agreement = ", ".join(f"{mid} {m['exact']:.2f} (n={m['n']})"
                              for mid, m in metrics.items()) or "no verdict"
        disagree = sum(m["disagree"] for m in metrics.values())
        return [f"judge repeats: {found['repeats']} per verdict (median; majority on 0/1); "
                f"repeats all agreeing, per metric: {agreement}",
                f"judge repeats: {count(disagree, 'verdict')} spread over more than "
                f"{found['tolerance']:g} of the scale (flagged repeats_disagree)"]

    def render(self, color: bool, width: int | None = None) -> str:
        # The table renderer loads only in a run that evaluated something.
        from ..engine.report import render_scorecard

        card = self.scorecard()
        header = self.header(card)
        if not card.models:
            # Nothing was scored, but why (missing outputs, bad case files) still matters.
            return "\n".join(["callqa scorecard: no output was scored",
                              *[line for line in header if "not evaluated" in line]])
        return render_scorecard(card, color=color, header=header, title=None,
                                order=self.model_order(card), width=width)

    # --- JSON report --------------------------------------------------------------------

    def report_data(self) -> dict[str, Any]:
        """The JSON report (schema ``callqa-report/1``): builtins only, no NaN."""
        # Written only at the end of a run that evaluated something.
        from ..engine.core.results import plain

        card = self.scorecard()
        models = models_section(card)
        # Each case entry is the whole result (TaskResult.from_dict reads it back: a merge of
        # shards rebuilds the scorecard from it) plus what the model answered.
        outputs = self.outputs()
        cases = [{**r.to_dict(), "output": outputs.get((r.model, r.case_id))}
                 for r in card.results]
        add_run_fields(cases, card)
        embedder = self.services.embedder()
        data: dict[str, Any] = {
            "schema": REPORT_SCHEMA,
            "run": {
                "judge": {"name": self.settings.judge,
                          "model": (self.settings.judge_model_name if self.settings.llm_judge
                                    else self.settings.judge_model),
                          "description": self.services.judge_description()},
                "judge_usage": self.usage.judge(card),
                "generation_usage": self.usage.generation(),
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
            "model_order": self.model_order(card),
            "metric_specs": {
                task: [spec.describe() for spec in card.specs(task)]
                for task in card.task_order if task in card.registry.tasks
            },
            "golden_cases": self.golden_cases(card),
            "cases": cases,
            "not_evaluated": self.not_evaluated(),
            "notes": list(card.notes),
            "judge_errors": {
                "verdicts": sum(1 for r in card.results for rec in r.judge_records
                                if rec.get("judge_error")),
                "outputs_without_task_score": sum(1 for r in card.results if r.incomplete),
            },
        }
        if self.settings.calibrate:
            data["calibration"], data["run"]["calibration"] = self.calibration(card)
        repeats = self.judge_repeats(card)
        if repeats is not None:
            data["run"]["judge_repeats"] = repeats
        if self.settings.shard is not None:
            # Which part of the pairs this run evaluated (a merge checks the set).
            index, count = self.settings.shard
            data["run"]["shard"] = f"{index}/{count}"
        return plain(data)  # type: ignore[no-any-return]

    def calibration(self, card: Scorecard) -> tuple[dict[str, Any], dict[str, Any]]:
        """Per labelled metric, the judge against the human_labels (the report's
        ``calibration``), and the verdict of the kappa gate (``run.calibration``)."""
        # Loaded only by a calibrating run.
        from ..engine.calibration import calibrate, verdict

        registry = self.services.registry()
        found = calibrate(card.results, self.catalog.files().cases,
                          {task: registry.metrics_for(task) for task in registry.tasks},
                          self.settings.calibration_model)
        problems = verdict(found, self.settings.min_kappa)
        return found, {"model": self.settings.calibration_model,
                       "min_kappa": self.settings.min_kappa,
                       "verdict": "fail" if problems else "pass", "problems": problems}


def _has_metric(agg: Any, metric_id: str) -> bool:
    return agg is not None and metric_id in agg.metrics


def _agg_value(agg: Any, metric_id: str) -> float | None:
    if agg is None or metric_id not in agg.metrics:
        return None
    value: float | None = agg.metrics[metric_id].value
    return value


def add_run_fields(cases: list[dict[str, Any]], card: Scorecard) -> None:
    """Each case record of a pair run more than once: its ``runs``, ``pass_rate`` and
    ``flaky``, and each metric's ``mean`` and ``sd`` over the runs (single runs unchanged)."""
    # Loaded with the scorecard already.
    from ..engine.runs import metric_spread

    groups: dict[tuple[str | None, str, str], list[TaskResult]] = {}
    for result in card.results:
        groups.setdefault((result.model, result.task, result.case_id), []).append(result)
    for record in cases:
        runs = groups.get((record["model"], record["task"], record["case_id"]), [])
        if len(runs) < 2:
            continue
        outcomes = [r.passed for r in runs if r.passed is not None]
        record["runs"] = len(runs)
        record["pass_rate"] = sum(outcomes) / len(outcomes) if outcomes else None
        record["flaky"] = 0 < sum(outcomes) < len(outcomes)
        for mid, spread in metric_spread(runs).items():
            if mid in record["metrics"]:
                record["metrics"][mid].update(mean=spread["mean"], sd=spread["sd"])


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def models_section(card: Scorecard) -> dict[str, Any]:
    """The report's ``models``: per model, its task aggregates and final figures."""
    models: dict[str, Any] = {}
    for name, model_card in card.models.items():
        tasks = {}
        for task, agg in model_card.tasks.items():
            tasks[task] = {
                "score": agg.score,
                "interval": agg.interval,
                "cases": agg.cases,
                "invalid_cases": agg.invalid_cases,
                "judge_error_cases": agg.judge_error_cases,
                "blocked_cases": agg.blocked_cases,
                "disqualified": agg.disqualified,
                "not_scored": list(agg.not_scored),
                "metrics": {
                    mid: {"value": m.value, "rating": m.rating, "blocker": m.blocker,
                          "interval": m.interval}
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
            "final_interval_a": model_card.final_interval_a,
            "final_interval_b": model_card.final_interval_b,
            "rank_interval": model_card.rank_interval,
            "rank_ties": list(model_card.rank_ties),
            **({"runs": runs} if (runs := model_card.runs_summary()) is not None else {}),
            "any_blocker": model_card.any_blocker,
            "missing_tasks": list(model_card.missing_tasks),
            "usage": model_card.usage,
        }
    return models
