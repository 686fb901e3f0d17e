"""What a run reports at its end, on the controller (or the only process): the results
tests attached to their reports, the scorecard, the header above it and the JSON report."""

from __future__ import annotations

import importlib
import platform
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, cast

from .._version import __version__
from ..engine.core.urls import redact_known
from .gaps import (
    CATALOGUE_CASES,
    errored_pairs,
    judge_error_lines,
    no_output_pairs,
    not_evaluated,
    not_evaluated_lines,
    partial_run_lines,
    policy_lines,
    unread_case_files,
    unscored_lines,
)
from .repeated import (
    Pair,
    by_model,
    judge_repeat_lines,
    run_fields,
    run_groups,
    run_notes,
    run_outcome,
    runs_lines,
    runs_section,
    unproduced_runs,
)
from .settings import (
    SKIPPED_RUNS,
    CallqaUsageError,
    Settings,
    count,
    from_root,
)
from .spool import NOT_JSON, SCORECARD_DETAILS, ResultSpool, entry_text, golden_entry, kept_records

if TYPE_CHECKING:
    from pathlib import Path

    from ..engine.core.results import MetricResult, Rating, TaskResult
    from ..engine.scorecard import Scorecard
    from .catalog import Catalog
    from .host import Host
    from .services import Services
    from .usage import Usage

# What the scorecard and the report load at the end of a run (see Summary.preload).
# numpy loads its random generators on first use: the bootstrap's intervals are that use.
ENGINE_AT_THE_END = ("pytest_callqa.engine.scorecard", "pytest_callqa.engine.report",
                     "pytest_callqa.engine.loading", "pytest_callqa.engine.embeddings",
                     "numpy.random", "pytest_callqa.run.intervals")

REPORT_SCHEMA = "callqa-report/1"
# Where the JSON report's case entries and golden cases go in its text while the rest is
# serialised (deliver.write_report streams them in, one at a time).
CASES_MARK = "\x00callqa-cases\x00"
GOLDEN_MARK = "\x00callqa-golden-cases\x00"
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
        # What each test attached to its report, without its result, output and golden
        # case: those are spooled to a temporary file as they arrive, so the memory a run
        # needs does not grow with what every output's result says.
        self.collected: dict[str, dict[str, Any]] = {}
        self.spool = ResultSpool()
        # Where each (model, case, run) result is spooled: the test and which of its runs.
        self._entry_of: dict[tuple[str | None, str, int], tuple[str, int]] = {}
        self._output_of: dict[tuple[str | None, str], str] = {}
        self._scorecard: Scorecard | None = None
        # Why the project's pytest_callqa_scorecard failed, if it did; why the run stopped
        # before its last test (-x, --maxfail, Ctrl-C), if it did.
        self.hook_problem: str | None = None
        self.stopped_early: str | None = None
        # The models the project's pytest_callqa_scorecard removed from the scorecard.
        self._removed: set[str] = set()
        self._unevaluated: tuple[Scorecard, list[dict[str, Any]]] | None = None  # unevaluated()

    def record(self, nodeid: str, payload: dict[str, Any]) -> None:
        """Keep what a test attached to its report (:func:`spool.packed`): its result,
        output and golden case go to the spool, the rest stays in :attr:`collected`."""
        self.collected[nodeid] = self.spool.keep(nodeid, payload)

    def close(self) -> None:
        """Drop the spooled results (the end of the run)."""
        self.spool.close()

    def results(self) -> list[TaskResult]:
        """One result per (model, case, run), whichever tests and workers scored it, as
        the scorecard needs it: each metric's value, rating and flags, the pooled rates'
        counts and the judge errors; reasons, details and judge records stay in the spooled
        entries, which the JSON report carries whole. A result of a repeated run has the
        run's outcome over the pair's tests in ``passed`` (:func:`run_outcome`)."""
        unique: dict[tuple[str | None, str, int], TaskResult] = {}
        shared: dict[tuple[Any, ...], MetricResult] = {}
        # Each (model, case, run) some test over repeated runs gave an outcome for.
        outcome: dict[tuple[str | None, str, int], bool | None] = {}
        for nodeid in self.spool.tests():
            views = self.spool.views(nodeid)
            # A test over repeated runs carries whether it passed each run (None: the tool
            # failed in it) and the runs it skipped, whose outcome another test's decides.
            collected = self.collected.get(nodeid, {})
            passed, skipped = collected.get("passed") or [], collected.get(SKIPPED_RUNS) or ()
            for index, data in enumerate(views):
                run = int(data.get("run", 0))
                key = (data.get("model"), data["case_id"], run)
                # Two tests of one pair that disagree (one got a verdict the judge could not
                # give the other) leave it the judge's error, not scored (docs/judge.md).
                if key not in unique or (data.get("judge_errors")
                                         and not unique[key].judge_errors):
                    unique[key] = _for_scorecard(data, shared)
                    self._entry_of[key] = (nodeid, index)
                # By run: a run the test could not produce has an outcome and no result.
                if run < len(passed) and run not in skipped:
                    ran = None if passed[run] is None else bool(passed[run])
                    outcome[key] = run_outcome(outcome[key], ran) if key in outcome else ran
            self._output_of.setdefault((views[0].get("model"), views[0]["case_id"]), nodeid)
        for key, ran in outcome.items():
            unique[key].passed = ran
        return list(unique.values())

    def case_entries(self, card: Scorecard) -> Iterator[dict[str, Any]]:
        """The report's case entries, in the scorecard's order, read back one at a time:
        each the whole result (``TaskResult.from_dict`` reads it back: a merge of shards
        rebuilds the scorecard from it) plus what the model answered, and for a pair run
        more than once its run fields (:func:`run_fields`)."""
        groups = run_groups(card)
        unproduced = unproduced_runs(self.unevaluated(card))
        for r in card.results:
            yield self._case_entry(r, groups, unproduced)

    def case_entry_texts(self, card: Scorecard) -> Iterator[str]:
        """:meth:`case_entries` as the report writes them. The entry of a pair run once,
        whose output its own test recorded, is what that test sent (:func:`packed`), so it
        is written as it came, unless its text holds what may be a NaN (then it is read
        and written again, which refuses a real one)."""
        groups = run_groups(card)
        unproduced = unproduced_runs(self.unevaluated(card))
        for r in card.results:
            found = self._entry_of.get((r.model, r.case_id, r.run))
            pair = (r.model, r.task, r.case_id)
            if (found is not None and found[1] == 0 and r.passed is None
                    and self._output_of.get((r.model, r.case_id)) == found[0]
                    and len(groups.get(pair, [])) + unproduced.get(pair, 0) < 2):
                text = self.spool.texts(found[0])[0]
                if not any(word in text for word in NOT_JSON):
                    yield text.decode("utf-8")
                    continue
            yield entry_text(self._case_entry(r, groups, unproduced))

    def _case_entry(self, r: TaskResult, groups: Mapping[Pair, list[TaskResult]],
                    unproduced: Mapping[Pair, int]) -> dict[str, Any]:
        found = self._entry_of.get((r.model, r.case_id, r.run))
        if found is None:
            # A result the scorecard hook added: all there is of it is in memory.
            record = {**r.to_dict(), "output": None}
        else:
            nodeid, index = found
            entry = self.spool.entry(nodeid)
            result = [entry["result"], *entry["runs"]][index]
            if "output" in result:
                # A later run's own output (a live model's, when it differs from run 1's).
                output = result.pop("output")
            else:
                # Otherwise every run of a pair reports the output its first test recorded.
                first = self._output_of.get((r.model, r.case_id), nodeid)
                output = (entry["output"] if first == nodeid
                          else self.spool.entry(first)["output"])
            record = {**result, "output": output}
            if r.passed is not None:
                record["passed"] = r.passed
        run_fields(record, groups, unproduced)
        return record

    def configured_models(self) -> list[str]:
        """The models the run was configured with, in order (none if unreadable: tests said)."""
        try:
            return self.catalog.models()
        except CallqaUsageError:
            return []

    def model_order(self, card: Scorecard) -> list[str]:
        """The scorecard's models in the configured order (models the hook added last)."""
        configured = self.configured_models()
        return [m for m in configured if m in card.models] + [
            m for m in card.models if m not in configured]

    def golden_case_entries(self, card: Scorecard) -> Iterator[tuple[str, dict[str, Any]]]:
        """The golden cases behind the results, for a reader of the report, one at a time
        (:func:`golden_entry`), in the catalogue's order. Each is what the first test of the
        case sent (the case as it was evaluated), so the end of a run reads no case file
        again; only a case no test sent (a result a scorecard hook added) is read from its
        file. The xdist controller, which collects nothing, orders them by the catalogue
        places the tests sent; it scans the case files only when one was not sent."""
        wanted = {r.case_id for r in card.results}
        if not wanted:
            return
        if not self.catalog.loaded:
            ordered = self.spool.golden_order(wanted)
            if ordered is not None:
                for case_id in ordered:
                    yield case_id, self.spool.sent_golden(case_id)
                return
            for case in self.catalog.each_case():
                if case.id in wanted:
                    yield case.id, golden_entry(case)
            return
        for ref in self.catalog.files().cases:
            if ref.id not in wanted:
                continue
            sent = self.spool.golden(ref.id)
            if sent is not None:
                yield ref.id, sent
                continue
            try:
                case = self.catalog.case(ref)
            except CallqaUsageError:
                continue  # its file changed or went since collection
            yield case.id, golden_entry(case)

    def not_evaluated(self, results: Sequence[TaskResult]) -> list[dict[str, Any]]:
        """:func:`gaps.not_evaluated`, without the pairs of models the scorecard hook removed."""
        return [e for e in not_evaluated(self.collected.values(), self.catalog.bad_files(),
                                         results) if e.get("model") not in self._removed]

    def unevaluated(self, card: Scorecard) -> list[dict[str, Any]]:
        """:meth:`not_evaluated` of ``card``'s results, once per scorecard: it walks every test."""
        if self._unevaluated is None or self._unevaluated[0] is not card:
            self._unevaluated = (card, self.not_evaluated(card.results))
        return self._unevaluated[1]

    @property
    def has_evaluations(self) -> bool:
        return bool(self.collected)

    @property
    def delivers(self) -> bool:
        """Whether the run ends with a scorecard and its files: it evaluated something, or
        it is a shard (one with no pair still writes its empty report, for the merge)."""
        return self.has_evaluations or self.settings.shard is not None

    @staticmethod
    def preload() -> None:
        """Import the engine modules the end of the run needs (the scorecard, its table, the
        case loader, the intervals kept for the next run), without building anything, in a
        thread while the run waits on something else: the xdist controller while its workers
        run, the only process while its judge batch waits on the server
        (:meth:`CallqaSession.preload_in_background`). Otherwise the imports come after the
        last test, on the run's critical path."""
        for name in ENGINE_AT_THE_END:
            importlib.import_module(name)

    def scorecard(self) -> Scorecard:
        """The run's scorecard, post-processed by ``pytest_callqa_scorecard`` (built once)."""
        if self._scorecard is None:
            # The scorecard loads only in a run that evaluated something.
            from ..engine.scorecard import build_scorecard
            from ..engine.stats import remembered
            from .intervals import load_memo, save_memo

            memo = load_memo(self.settings)
            entries = self.not_evaluated(results := self.results())
            with remembered(memo):
                card = build_scorecard(results, registry=self.services.registry(),
                                       disqualify_tolerance=self.settings.disqualify_tolerance,
                                       errored=errored_pairs(entries),
                                       no_output=no_output_pairs(entries))
            ours = run_notes(card, entries)
            card.notes.extend(ours)
            if memo is not None:
                save_memo(memo, self.settings)
            built = set(card.models)
            try:
                self.host.post_process(card)
            except Exception as exc:  # the project's code: any exception at all
                # What the hook would have added is missing; the scorecard and the reports
                # are not (a traceback ended the run before them).
                said = " ".join(redact_known(str(exc)).split())[:300]
                self.hook_problem = (
                    f"callqa: the project's pytest_callqa_scorecard hook raised "
                    f"{type(exc).__name__}: {said} — the scorecard and the reports are the "
                    "run's without it")
            # A model the hook removed leaves every report, its results (its cases, the
            # header's counts, the worst cases), its pairs not evaluated and the run's notes
            # on them with it; the hook's own notes stay.
            self._removed = built - set(card.models)
            if self._removed:
                card.results = [r for r in card.results if r.model not in self._removed]
                stale = set(ours) - set(run_notes(card, self.not_evaluated(card.results)))
                card.notes[:] = [n for n in card.notes if n not in stale]
            # The hook's notes go to the terminal and every report: a key they quote too.
            card.notes[:] = [redact_known(str(note)) for note in card.notes]
            self._scorecard = card
        return self._scorecard

    def header(self, card: Scorecard) -> list[str]:
        """What was run and what was not scored, printed above the table."""
        results = card.results
        cases = {(r.task, r.case_id) for r in results}
        lines = [
            f"judge: {self.services.judge_description()}",
            *self.usage.lines(card),
            f"embeddings: {self.services.embedder_identity()[1]}",
            f"results: {count(len(results), 'output')} scored "
            f"({count(len(card.models), 'model')}, {count(len(cases), 'case')})",
        ]
        lines += judge_error_lines(results)
        lines += self._repeat_lines(card)
        if not self.settings.benchmarks:
            lines.append("benchmarks: Layer 2 standard benchmarks switched off "
                         "(--no-callqa-benchmarks)")
        lines += unscored_lines(card, benchmarks=self.settings.benchmarks)
        lines += policy_lines(self.services.registry())
        lines += partial_run_lines({"stopped_early": self.stopped_early,
                                    "selection": self.host.selection})
        return lines + not_evaluated_lines(self.unevaluated(card))

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
        return (runs_lines(card, self.settings.pass_rule, self.unevaluated(card))
                + self._judge_repeat_lines(card))

    def _judge_repeat_lines(self, card: Scorecard) -> list[str]:
        if self.settings.judge_repeats > 1 and not self.settings.llm_judge:
            return [f"judge repeats: {self.settings.judge_repeats} asked, none made: the "
                    f"{self.settings.judge} judge is deterministic"]
        found = self.judge_repeats(card)
        return [] if found is None else judge_repeat_lines(found)

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

    def report_data(self, *, with_cases: bool = True) -> dict[str, Any]:
        """The JSON report (schema ``callqa-report/1``): builtins only, no NaN. Without
        ``with_cases`` its ``cases`` and ``golden_cases`` are marks for
        :func:`deliver.write_report` to stream :meth:`case_entries` and
        :meth:`golden_case_entries` in, rather than holding every result and case at once."""
        # Written only at the end of a run that evaluated something.
        from ..engine.core.results import plain

        card = self.scorecard()
        models = models_section(card, self.unevaluated(card))
        cases: Any = list(self.case_entries(card)) if with_cases else CASES_MARK
        embedder_name, embedder_description = self.services.embedder_identity()
        data: dict[str, Any] = {
            "schema": REPORT_SCHEMA,
            "run": {
                "judge": {"name": self.settings.judge,
                          "model": (self.settings.judge_model_name if self.settings.llm_judge
                                    else self.settings.judge_model),
                          "description": self.services.judge_description()},
                "judge_usage": self.usage.judge(card),
                "generation_usage": self.usage.generation(),
                "embeddings": {"name": embedder_name, "description": embedder_description},
                "benchmarks": self.settings.benchmarks,
                "disqualify_tolerance": self.settings.disqualify_tolerance,
                "settings": run_settings(self.settings, self.host.rootpath,
                                         self.configured_models(), self.catalog.digest()),
                "selection": self.host.selection,
                CATALOGUE_CASES: self.catalog.listed(),
                "stopped_early": self.stopped_early,
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
                task: [spec.describe(card.registry.tolerances.get(f"{task}.{spec.id}"))
                       for spec in card.specs(task)]
                for task in card.task_order if task in card.registry.tasks
            },
            "golden_cases": (dict(self.golden_case_entries(card)) if with_cases
                             else GOLDEN_MARK),
            "cases": cases,
            "not_evaluated": self.unevaluated(card),
            "notes": list(card.notes),
            "judge_errors": {
                "verdicts": sum(1 for r in card.results for rec in r.judge_records
                                if rec.get("judge_error")),
                "outputs_without_task_score": sum(1 for r in card.results if r.incomplete),
            },
        }
        if self.settings.calibrate:
            data["calibration"], data["run"]["calibration"] = self.calibration(
                card, data["not_evaluated"])
        repeats = self.judge_repeats(card)
        if repeats is not None:
            data["run"]["judge_repeats"] = repeats
        if self.settings.shard is not None:
            # Which part of the pairs this run evaluated (a merge checks the set).
            index, count = self.settings.shard
            data["run"]["shard"] = f"{index}/{count}"
        return plain(data)  # type: ignore[no-any-return]

    def calibration(self, card: Scorecard, unevaluated: Sequence[Mapping[str, Any]],
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Per labelled metric, the judge against the human_labels (the report's
        ``calibration``), and the verdict of the kappa gate (``run.calibration``: pass,
        fail, or incomplete when the tool failed on labels — judge or metric code errors —
        or the run did not evaluate labelled outputs). ``unevaluated`` is the report's
        ``not_evaluated``: why a labelled output has no result; one it does not name had no
        test selected."""
        # Loaded only by a calibrating run.
        from ..engine.calibration import calibrate, incomplete, outcome, verdict

        model = self.settings.calibration_model
        why = {"missing_output": "without an output", "test_error": "whose test errored"}
        not_run = {str(entry["case_id"]): why[entry["kind"]] for entry in unevaluated
                   if entry.get("model") == model and entry.get("kind") in why}
        registry = self.services.registry()
        found = calibrate(card.results, list(self.catalog.each_case()),
                          {task: registry.metrics_for(task) for task in registry.tasks},
                          model, not_run=not_run)
        # A file the run could not read may hold labelled cases: how many, no one can say.
        unread = unread_case_files(unevaluated)
        return found, {"model": self.settings.calibration_model,
                       "min_kappa": self.settings.min_kappa,
                       "verdict": outcome(found, self.settings.min_kappa, unread),
                       "problems": verdict(found, self.settings.min_kappa),
                       "incomplete": incomplete(found, unread),
                       "unread_case_files": unread}


def _for_scorecard(data: dict[str, Any],
                   shared: dict[tuple[Any, ...], MetricResult]) -> TaskResult:
    """A result as the scorecard reads it (see :meth:`Summary.results`). Metric results
    that say the same are one object (``shared``): most metrics of most outputs repeat a
    rating, a 1.0 or a *not scored*, and 100,000 outputs must fit in memory."""
    # Loaded with the results the tests attached, at the end of a run.
    from ..engine.core.results import MetricResult, TaskResult

    intern = sys.intern
    metrics: dict[str, MetricResult] = {}
    for mid, m in (data.get("metrics") or {}).items():
        details = m.get("details") or {}
        kept = tuple((k, details[k]) for k in SCORECARD_DETAILS if k in details)
        rating = m.get("rating")
        key = (m.get("value"), bool(m.get("scored", True)), rating,
               bool(m.get("blocker", False)), bool(m.get("flagged", False)),
               bool(m.get("judge_error", False)), kept)
        found = shared.get(key)
        if found is None:
            found = shared[key] = MetricResult(
                value=key[0], scored=key[1],
                rating=cast("Rating", intern(rating)) if rating else None,
                details=dict(kept), blocker=key[3], flagged=key[4], judge_error=key[5])
        metrics[intern(mid)] = found
    model = data.get("model")
    return TaskResult(
        task=intern(data["task"]), case_id=data["case_id"],
        model=intern(model) if isinstance(model, str) else None,
        run=int(data.get("run", 0)), score=data.get("score"), valid=bool(data["valid"]),
        blocked=bool(data["blocked"]), blockers=[intern(b) for b in data.get("blockers", [])],
        metrics=metrics, not_scored=[intern(n) for n in data.get("not_scored", [])],
        renormalised=bool(data.get("renormalised", False)),
        judge_records=kept_records(data),
        usage=dict(data.get("usage", {})), notes=list(data.get("notes", [])),
        judge_errors=list(data.get("judge_errors", [])), pass_bar=data.get("pass_bar"),
        copied_run=data.get("copied_run") is True)


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def models_section(card: Scorecard, not_evaluated: Sequence[Any] = ()) -> dict[str, Any]:
    """The report's ``models``: per model, its task aggregates and final figures, and the
    runs summary of a run over repeated runs (:func:`repeated.runs_section`; the runs its
    tests could not produce, from the run's ``not_evaluated``, counted as unknown)."""
    models: dict[str, Any] = {}
    results = by_model(card)
    unproduced = unproduced_runs(not_evaluated)
    for name, model_card in card.models.items():
        tasks = {}
        for task, agg in model_card.tasks.items():
            tasks[task] = {
                "score": agg.score,
                "interval": agg.interval,
                "cases": agg.cases,
                "invalid_cases": agg.invalid_cases,
                "judge_error_cases": agg.judge_error_cases,
                "unscored_cases": agg.unscored_cases,
                "blocked_cases": agg.blocked_cases,
                "disqualified": agg.disqualified,
                "blocker_unknown_cases": agg.blocker_unknown_cases,
                "unknown_blockers": list(agg.unknown_blockers),
                "errored_cases": agg.errored_cases,
                "no_output_cases": agg.no_output_cases,
                "disqualification_unknown": agg.disqualification_unknown,
                "not_scored": list(agg.not_scored),
                # How many of its cases the judge could not score, and how many it flagged:
                # a figure over fewer cases than the task's is marked so wherever it is shown.
                "metrics": {
                    mid: {"value": m.value, "rating": m.rating, "blocker": m.blocker,
                          "interval": m.interval, "flagged": m.flagged,
                          "judge_errors": m.judge_errors}
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
            # Whether the rank weighed cost: the HTML report's rank row says what it ranked by.
            "cost_efficiency": model_card.cost_efficiency,
            "cost_adjusted_rank": model_card.cost_adjusted_rank,
            "final_interval_a": model_card.final_interval_a,
            "final_interval_b": model_card.final_interval_b,
            "rank_interval": model_card.rank_interval,
            "rank_ties": list(model_card.rank_ties),
            **({"runs": runs} if (runs := runs_section(model_card, results.get(name, []),
                                                     unproduced))
               is not None else {}),
            "any_blocker": model_card.any_blocker,
            "disqualified": model_card.disqualified,
            **model_card.gap_fields(),
            "usage": model_card.usage,
        }
    return models


def run_settings(settings: Settings, root: Path, models: list[str],
                 catalogue: str | None) -> dict[str, Any]:
    """The report's ``run.settings``: what decides which results a run has and how they are
    read — the models (the pairs are they times the cases), where the cases and the outputs
    are, the runs per pair and their pass rule, the judge's asks per verdict and their
    spread, the regression tolerance, and the prices given (each case's cost is priced by
    them), and the catalogue's fingerprint (``Catalog.digest``). The shards of one run agree
    on all of them, or the merge refuses them: a shard of
    another model list, run count or price makes a scorecard that silently lacks pairs or
    mixes unlike results."""
    return {
        "models": models,
        "cases": None if settings.cases is None else from_root(settings.cases, root),
        "outputs": None if settings.outputs is None else from_root(settings.outputs, root),
        "runs": settings.runs,
        "pass_rule": settings.pass_rule,
        "judge_repeats": settings.judge_repeats,
        "judge_repeat_tolerance": settings.judge_repeat_tolerance,
        "regression_tolerance": settings.regression_tolerance,
        "prices": settings.prices.configured(),
        "catalogue": catalogue,
    }
