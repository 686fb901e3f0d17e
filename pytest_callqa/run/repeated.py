"""The runs of a (model, case) evaluated more than once (``--callqa-runs N``), as the report
and the scorecard tell them: a run's outcome over the pair's tests, the run fields of a case
record, a model's runs summary, and the runs whose outcome is unknown.

A run's outcome is unknown when a test of the pair could not give it because the tool failed
in that run (a verdict the judge could not give, a run that could not be produced) and no
test of the pair failed it. Such a result keeps ``passed`` None inside a pair of two or more
runs, which is how a report read back (a merge of shards) tells it apart: a single run has
no outcome at all. Unknown runs are left out of every run figure — pass rate, pass^k,
pass@k, flaky — and counted apart; a pair left with fewer than two known runs has no run
figures (the scorecard's run statistics need two), rather than figures made up of what
happened to be known.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .gaps import not_evaluated_notes, unregistered_notes
from .settings import count

if TYPE_CHECKING:
    from ..engine.core.results import TaskResult
    from ..engine.scorecard import ModelCard, Scorecard


# The cases a note names before "and N more" (the report's runs summary lists them all).
NAMED = 5

# A pair: (model, task, case id).
Pair = tuple[str | None, str, str]


def run_outcome(one: bool | None, other: bool | None) -> bool | None:
    """A run's outcome over two tests of its pair: it passes when both passed it, fails when
    either failed it — a failure is the model's whatever the other test could not say — and
    is otherwise unknown (None)."""
    if one is False or other is False:
        return False
    if one is None or other is None:
        return None
    return True


def run_groups(card: Scorecard) -> dict[Pair, list[TaskResult]]:
    """The scorecard's results by (model, task, case): the runs of each pair."""
    groups: dict[Pair, list[TaskResult]] = {}
    for result in card.results:
        groups.setdefault((result.model, result.task, result.case_id), []).append(result)
    return groups


def unproduced_runs(not_evaluated: Iterable[Any]) -> dict[Pair, int]:
    """How many runs of each pair its test could not produce, from a run's ``not_evaluated``
    entries (``unproduced_run``): runs without a result, whose outcome is unknown."""
    found: dict[Pair, int] = {}
    for entry in not_evaluated:
        if isinstance(entry, Mapping) and entry.get("kind") == "unproduced_run":
            model = entry.get("model")
            pair = (None if model is None else str(model), str(entry.get("task")),
                    str(entry.get("case_id")))
            found[pair] = found.get(pair, 0) + 1
    return found


def run_fields(record: dict[str, Any], groups: Mapping[Pair, list[TaskResult]],
               unproduced: Mapping[Pair, int]) -> None:
    """A case record of a pair run more than once gets its ``runs`` (those not produced
    included), ``pass_rate`` and ``flaky`` (over the runs of known outcome; ``pass_rate``
    null when none is known), its ``passed`` (null for a run whose outcome is unknown),
    ``unknown_runs`` when some run's outcome is unknown or some run was not produced, and
    each metric its ``mean`` and ``sd`` over the runs (single runs unchanged)."""
    # Loaded with the scorecard already.
    from ..engine.runs import metric_spread

    pair = (record["model"], record["task"], record["case_id"])
    # A copy of run 1 (a recorded output the offline judge scores alike) samples nothing.
    runs = [r for r in groups.get(pair, []) if not r.copied_run]
    missing = unproduced.get(pair, 0)
    if len(runs) + missing < 2:
        return
    outcomes = [r.passed for r in runs if r.passed is not None]
    record["runs"] = len(runs) + missing
    # Of fewer than two known outcomes no rate is told (as the model's runs summary leaves
    # such a case out): one run that passed is no pass rate of 1.
    known = len(outcomes) >= 2
    record["pass_rate"] = sum(outcomes) / len(outcomes) if known else None
    record["flaky"] = 0 < sum(outcomes) < len(outcomes) if known else None
    record.setdefault("passed", None)
    if len(outcomes) < len(runs) + missing:
        record["unknown_runs"] = len(runs) + missing - len(outcomes)
    for mid, spread in metric_spread(runs).items():
        if mid in record["metrics"]:
            record["metrics"][mid].update(mean=spread["mean"], sd=spread["sd"],
                                          scored_runs=spread["scored_runs"])


def unknown_runs(results: Iterable[TaskResult],
                 unproduced: Mapping[Pair, int]) -> tuple[int, list[str], int]:
    """Of one model's results: how many runs of its repeated pairs have an unknown outcome
    (those its test could not produce, in ``unproduced``, included), the pairs (``task/case``,
    as the runs summary names them) left with fewer than two known runs, and the most runs
    of a pair."""
    groups: dict[Pair, list[TaskResult]] = {}
    for result in results:
        groups.setdefault((result.model, result.task, result.case_id), []).append(result)
    unknown, without, most = 0, [], 0
    for pair, runs in groups.items():
        not_produced = unproduced.get(pair, 0)
        if len(runs) + not_produced < 2:
            continue
        most = max(most, len(runs) + not_produced)
        sampled = [r for r in runs if not r.copied_run]
        missing = sum(1 for r in sampled if r.passed is None) + not_produced
        unknown += missing
        if missing and len(sampled) + not_produced - missing < 2:
            without.append(f"{pair[1]}/{pair[2]}")
    return unknown, sorted(without), most


def runs_section(model_card: ModelCard, results: Iterable[TaskResult],
                 unproduced: Mapping[Pair, int]) -> dict[str, Any] | None:
    """A model's ``runs`` in the report: the scorecard's runs summary over the pairs with two
    or more known runs (its ``runs``: the most known runs of a pair), plus, when some run's
    outcome is unknown or was not produced, ``unknown_runs`` and ``unknown_cases`` (the pairs
    without run figures) — with null figures when no pair has them. None without repeated
    runs."""
    summary = model_card.runs_summary()
    unknown, without, _most = unknown_runs(results, unproduced)
    if not unknown:
        return summary
    if summary is None:
        # As the scorecard counts them: no pair with known runs, no run counted.
        summary = {"runs": 0, "k": None, "cases": 0, "pass_rate": None, "pass_hat_k": None,
                   "pass_at_k": None, "flaky": []}
    return {**summary, "unknown_runs": unknown, "unknown_cases": without}


def by_model(card: Scorecard) -> dict[str | None, list[TaskResult]]:
    """The scorecard's results by model."""
    found: dict[str | None, list[TaskResult]] = {}
    for result in card.results:
        found.setdefault(result.model, []).append(result)
    return found


def unknown_run_notes(card: Scorecard, unproduced: Mapping[Pair, int]) -> list[str]:
    """The scorecard's note per model with runs of unknown outcome (or not produced): how
    many were left out of its run figures, why, and the pairs left without any."""
    notes = []
    for model, results in by_model(card).items():
        unknown, without, _most = unknown_runs(results, unproduced)
        if not unknown:
            continue
        note = (f"E {model}: {count(unknown, 'run')} of unknown outcome left out of the "
                "repeated runs' figures (pass rate, pass^k, pass@k, flaky): a test of the "
                "case errored in them — the tool failed (a judge error, a run that could not "
                "be produced), not the model — or skipped them")
        if without:
            shown = ", ".join(without[:NAMED]) + (
                f" and {len(without) - NAMED} more" if len(without) > NAMED else "")
            note += (f"; {count(len(without), 'case')} with fewer than two known runs, "
                     f"without run figures ({shown})")
        notes.append(note)
    return notes


def runs_lines(card: Scorecard, pass_rule: object, not_evaluated: Iterable[Any]) -> list[str]:
    """The scorecard header's line on repeated runs, when a pair ran more than once: the
    most runs of a pair, the pass rule, the flaky cases and the runs of unknown outcome
    (those not produced, from the run's ``not_evaluated``, included)."""
    summaries = [s for c in card.models.values() if (s := c.runs_summary()) is not None]
    unproduced = unproduced_runs(not_evaluated)
    runs = [unknown_runs(results, unproduced) for results in by_model(card).values()]
    most = max((found[2] for found in runs), default=0)
    if not most:
        return []
    flaky = sum(len(s["flaky"]) for s in summaries)
    unknown = sum(found[0] for found in runs)
    copied = sum(1 for result in card.results if result.copied_run)
    return [f"runs: up to {most} per (model, case), pass rule {pass_rule}; "
            f"{count(flaky, 'flaky case')} (runs disagree)"
            + (f"; {count(unknown, 'run')} of unknown outcome (the tool failed in a test of "
               "it, or a test skipped it) left out" if unknown else "")
            + (f"; {count(copied, 'run')} copied from run 1 (a recorded output the offline "
               "judge scores alike: no sample) left out" if copied else "")]


def judge_repeat_lines(found: Mapping[str, Any]) -> list[str]:
    """The header's lines on the judge's test-retest agreement, from ``run.judge_repeats``
    (as a run or a merge of shards writes it)."""
    metrics = found["metrics"]
    agreement = ", ".join(
        f"{mid} {'—' if m['exact'] is None else format(m['exact'], '.2f')} (n={m['n']})"
        for mid, m in metrics.items()) or "no verdict"
    disagree = sum(m["disagree"] for m in metrics.values())
    lines = [f"judge repeats: {found['repeats']} per verdict (median; majority on 0/1); "
             f"repeats all agreeing, per metric: {agreement}",
             f"judge repeats: {count(disagree, 'verdict')} spread over more than "
             f"{found['tolerance']:g} of the scale (flagged repeats_disagree)"]
    failed = sum(m.get("failed_asks", 0) for m in metrics.values())
    if failed:
        lines.append(f"judge repeats: {count(failed, 'verdict')} with an ask that gave no "
                     "score or one off the scale (left out of the agreement, which is over the "
                     "asks that scored on the scale)")
    return lines


def run_notes(card: Scorecard, not_evaluated: Iterable[Any]) -> list[str]:
    """The notes a run adds to the scorecard's own, in order: pairs a test error or a missing
    output left out, metrics scored but not registered, runs of unknown outcome. A merge of
    shards adds the same, so its report reads as one run's."""
    entries = list(not_evaluated)
    return [*not_evaluated_notes(entries), *unregistered_notes(card),
            *unknown_run_notes(card, unproduced_runs(entries))]

