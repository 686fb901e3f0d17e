"""A test over repeated runs (``--callqa-runs N``, or its ``callqa(runs=N)`` marker): the test
function is called once per run, each time with that run's ``callqa_result`` and
``callqa_output``, and the pass rule (:mod:`pytest_callqa.engine.runs`) makes one outcome of
the N. Other fixtures are set up once, for the test, as pytest always does: a test that takes
neither of the two itself, only through its fixtures (run 1's), is an error.

A judge error or a failed generation call in any run leaves that run's outcome unknown and
makes the test an error (the tool failed, not the model); the other runs are still called, so
what they say is known. Only when the known runs fail the test under its pass rule whatever
the unknown runs would have said (a failed run under ``all``; too few passes left for a
majority) does it fail, on the model's account; a pass is never decided around a run the
tool failed in. A run the test skips is left out of the pass rule, which decides on the other
runs; only a skip in every run skips the test.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pytest

from .outcomes import INTERRUPTION, TOOL_FAILURE, is_tool_failure, produce_or_fail, tool_failure
from .outputs import ModelOutput, for_report, own_copy
from .run.junit import run_properties
from .run.settings import ERROR_PAYLOAD, MAX_RUNS, SKIPPED_RUNS, UNPRODUCED_PAYLOAD, Missing

if TYPE_CHECKING:
    from .engine.core.results import TaskResult
    from .run.catalog import CaseRef
    from .session import CallqaSession

RUN_FIXTURES = frozenset({"callqa_result", "callqa_output"})
# The attribute of a call report that carries its runs (crosses xdist as builtins).
RUNS_ATTR = "callqa_runs"


@dataclass
class RunsRecord:
    """The outcome of each run of a test — None where the tool failed in it (a verdict the
    judge could not give, a run that could not be produced), which leaves the run's outcome
    unknown, and where the test skipped (``skipped``, numbered from 0: it does not apply to
    that run) — and what its pass rule made of the others (None when a run is unknown and
    the known runs do not fail the test: the test is an error)."""

    outcomes: list[bool | None]
    rule: str
    passed: bool | None
    skipped: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"outcomes": self.outcomes, "rule": self.rule, "passed": self.passed,
                "skipped": self.skipped}


RECORD_KEY = pytest.StashKey[RunsRecord]()


@dataclass(frozen=True)
class CaseMarker:
    """A test's ``callqa`` markers read as one: each keyword from the closest marker that
    sets it — a function's ``callqa(runs=2)`` under a module's ``callqa(task="qa")`` keeps the
    task (the closest marker alone replaced the module's, and the test ran on every task's
    cases) — the positional arguments of any of them, and ``conflict``: two markers of one
    function, class or module that set a keyword to different values (one of them was
    ignored without a word)."""

    kwargs: dict[str, Any]
    args: tuple[Any, ...]
    conflict: str | None


def case_marker(node: pytest.Item | Any) -> CaseMarker | None:
    """The merged ``callqa`` marker of ``node`` (a test or its definition); None without one."""
    kwargs: dict[str, Any] = {}
    owners: dict[str, Any] = {}
    args: tuple[Any, ...] = ()
    conflict = None
    found = False
    for where, owner, mark in _declared_marks(node):
        found = True
        args = args or tuple(mark.args)
        for key, value in mark.kwargs.items():
            if key not in kwargs:
                kwargs[key], owners[key] = value, owner
            elif owners[key] is owner and kwargs[key] != value and conflict is None:
                on = "of this test" if where is node else f"on {where.nodeid or where.name}"
                conflict = f"two callqa markers {on} set {key}: {kwargs[key]!r} and {value!r}"
    return CaseMarker(kwargs, args, conflict) if found else None


def _declared_marks(node: pytest.Item | Any) -> Iterator[tuple[Any, Any, Any]]:
    """``node``'s ``callqa`` marks, closest first, each with the node that holds it and what
    declared it. A class holds its bases' marks too (pytest reads them down its MRO, bases
    first): ordered by the MRO here, a subclass's own marker comes before its base's and wins,
    and only two marks one class declares can disagree — a subclass overriding its base's
    ``task`` is no conflict."""
    for where in reversed(node.listchain()):
        if isinstance(where, pytest.Class):
            for klass in where.obj.__mro__:
                declared = klass.__dict__.get("pytestmark", [])
                for mark in declared if isinstance(declared, list) else [declared]:
                    mark = getattr(mark, "mark", mark)
                    if getattr(mark, "name", None) == "callqa":
                        yield where, klass, mark
        else:
            for mark in where.own_markers:
                if mark.name == "callqa":
                    yield where, where, mark


def marker_runs(value: Any) -> str | None:
    """What is wrong with a ``callqa(runs=...)`` value, or None when it is a count >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"runs must be a whole number >= 1, got {value!r}"
    if value > MAX_RUNS:
        return f"runs must be at most {MAX_RUNS}, got {value!r}"
    return None


def item_runs(item: pytest.Item, default: int) -> int:
    """The runs of ``item``: its ``callqa(runs=N)`` marker, else the session's setting."""
    marker = case_marker(item)
    runs = marker.kwargs.get("runs") if marker is not None else None
    return runs if isinstance(runs, int) and marker_runs(runs) is None else default


def call_runs(item: pytest.Function, state: CallqaSession,
              payload_key: pytest.StashKey[dict[str, Any]]) -> bool | None:
    """The body of ``pytest_pyfunc_call``: run ``item`` over its runs, or None to leave a
    single-run test (or one without a callqa result or output) to pytest. The later runs'
    results and every run's outcome join the payload under ``payload_key``."""
    funcargs = item.funcargs
    runs = item_runs(item, state.settings.runs)
    if runs == 1 or not RUN_FIXTURES & set(funcargs) \
            or inspect.iscoroutinefunction(item.obj):
        return None
    argnames = item._fixtureinfo.argnames
    if not RUN_FIXTURES & set(argnames):
        # Its fixtures are set up once, with run 1's result: called again in each run, the
        # test checked run 1 N times, and runs 2..N were recorded as passed unchecked.
        name = "callqa_result" if "callqa_result" in funcargs else "callqa_output"
        later = "run 2" if runs == 2 else f"runs 2 to {runs}"
        raise tool_failure(
            f"callqa: this test runs {runs} times (--callqa-runs or callqa(runs=...)) but takes "
            f"{name} only through its fixtures, which are set up once, with run 1's: {later} "
            f"would not be checked. Take {name} as an argument of the test function, or give "
            "it @pytest.mark.callqa(runs=1)")
    # The case as collected (the resolver reads its body when it produces a run).
    params = item.callspec.params
    model, case = cast(str, params["callqa_model"]), cast("CaseRef", params["callqa_case"])
    resolver = state.resolver
    payload = item.stash.get(payload_key, None)
    rule = state.settings.pass_rule
    results: list[TaskResult | None] = []
    # Each run's output as produced — scored and reported — not the test's copy of it: a
    # recorded output is one object in every run (_attach).
    first = resolver.output(model, case)
    outputs = [first.value if isinstance(first, ModelOutput) else None]
    # Why a run could not be produced, as the report words it (produce_or_fail fills it).
    failed: tuple[pytest.Stash, pytest.StashKey[dict[str, Any]]] = (
        pytest.Stash(), pytest.StashKey[dict[str, Any]]())
    # The later runs that could not be produced, and why: their outcomes are unknown, and the
    # other runs are still produced and called.
    unproduced: dict[int, BaseException] = {}
    try:
        # Outputs first: a run without one skips the test, and has no result to ask for.
        for run in range(1, runs):
            produced = _produced(resolver.output, model, case, run, failed, unproduced)
            if isinstance(produced, Missing):
                pytest.skip(f"run {run + 1} of {runs}: {produced.reason}")
            outputs.append(produced.value if isinstance(produced, ModelOutput) else None)
        if "callqa_result" in funcargs:
            results = [cast("TaskResult", funcargs["callqa_result"])]
            for run in range(1, runs):
                results.append(None if run in unproduced else _produced(
                    resolver.result, model, case, run, failed, unproduced))
    except BaseException as exc:
        if not isinstance(exc, (KeyboardInterrupt, SystemExit, pytest.skip.Exception,
                                pytest.xfail.Exception)):
            # The test function has run in no run yet: whatever stopped the production (a
            # per-test time limit) is the tool's, as the same in run 1's setup is — never the
            # model's failure.
            setattr(exc, TOOL_FAILURE, True)
        if is_tool_failure(exc):
            # The test's time ran out while a run was produced, so the test function ran in
            # none: no run of the pair has a known outcome from this test.
            _keep(item, payload, results,
                  RunsRecord(outcomes=[None] * runs, rule=rule, passed=None), outputs)
            done = len(results) if "callqa_result" in funcargs else len(outputs)
            _unproduced(payload, failed, runs,
                        [run for run in range(1, runs) if run in unproduced or run >= done])
        raise
    if unproduced:
        _unproduced(payload, failed, runs, sorted(unproduced))

    def call(run_result: TaskResult | None, run: int, *,
             fresh: bool = False) -> BaseException | None:
        """The test function on ``run``'s result and output; ``fresh``: on a new copy of
        run 1's output (the call on the runs' mean, after run 1's call may have changed its
        copy)."""
        args = {name: funcargs[name] for name in argnames}
        if "callqa_result" in args:
            args["callqa_result"] = run_result
        if "callqa_output" in args and (run or fresh):
            # A copy of its own in each run: what one run changes in place, the next (and
            # the report) must not see. Run 1 has the fixture's, as a single run has.
            args["callqa_output"] = own_copy(outputs[run])
        try:
            item.obj(**args)
        except pytest.skip.Exception as exc:
            # The test does not apply to this run (a metric n/a on its output): the run is
            # left out of the pass rule, and the other runs are still called.
            return exc
        except (Exception, pytest.fail.Exception) as exc:
            # A ``pytest.fail`` in the test's own code fails the run, as it fails a test of
            # one run: the test's, or a time limit's (pytest-timeout) that ran out in that
            # code, not while the tool produced or scored the run (produce_or_fail).
            return exc
        return None

    failures: dict[int, BaseException] = dict(unproduced)
    skips: dict[int, BaseException] = {}
    for run in range(runs):
        if run not in unproduced:
            failure = call(results[run] if results else None, run)
            if isinstance(failure, pytest.skip.Exception):
                skips[run] = failure
            elif failure is not None:
                failures[run] = failure
    if len(skips) == runs:
        raise skips[0]  # the test applies to no run: skipped, as a test of one run is
    # The runs the pass rule decides on: a skipped run has no outcome (None) from this test.
    checked = [run for run in range(runs) if run not in skips]
    tool_errors = [failures[run] for run in sorted(failures) if is_tool_failure(failures[run])]
    outcomes: list[bool | None] = [
        None if run in skips or (run in failures and is_tool_failure(failures[run]))
        else run not in failures for run in range(runs)]
    skipped = sorted(skips)
    # The engine's run rules load with the first repeated test.
    from .engine.runs import mean_result, metric_specs, rule_passes

    # The mean rule judges the mean of every checked run's result, the unknown runs' values
    # too; the others (and the mean of a test without a result) judge the runs' outcomes.
    on_mean = rule == "mean" and bool(results)
    outcome_rule = "majority" if rule == "majority" else "all"
    if tool_errors and (on_mean or rule_passes(outcome_rule, [outcomes[run] is not False
                                                              for run in checked])):
        # The test is the tool's error unless the known runs fail it even were every unknown
        # run a pass. A pass is never decided so: it would pass over the tool's failure.
        _keep(item, payload, results, RunsRecord(outcomes=outcomes, rule=rule, passed=None,
                                                 skipped=skipped), outputs)
        raise tool_errors[0]
    decisive: BaseException | None
    if on_mean:
        # Every run was produced: an unproduced one is a tool error, raised above.
        scored = [cast("TaskResult", results[run]) for run in checked]
        specs = metric_specs(state.services.registry(), scored[0].task)
        decisive = call(mean_result(scored, specs), 0, fresh=True)
        if isinstance(decisive, pytest.skip.Exception):
            raise decisive  # the test does not apply to the runs' mean
    elif rule_passes(outcome_rule, [outcomes[run] is True for run in checked]):
        decisive = None
    else:
        # The first run the model failed (an unknown run's error is the tool's, not this).
        decisive = failures[min(run for run in failures if outcomes[run] is False)]
    # A tool failure on the mean of the runs leaves the rule undecided, as in a run.
    undecided = decisive is not None and is_tool_failure(decisive)
    _keep(item, payload, results, RunsRecord(outcomes=outcomes, rule=rule,
                                             passed=None if undecided else decisive is None,
                                             skipped=skipped), outputs)
    if decisive is not None:
        raise decisive
    return True


def _unproduced(payload: dict[str, Any] | None,
                failed: tuple[pytest.Stash, pytest.StashKey[dict[str, Any]]],
                runs: int, missing: list[int]) -> None:
    """The runs (``missing``, numbered from 0) that the test could not produce, on its
    payload for the run's list of what was not evaluated: the pair's other runs may have
    results, and without this the scorecard would read as if it had only those."""
    stash, key = failed
    error = stash.get(key, None)
    if payload is None or error is None or not missing:
        return
    payload[UNPRODUCED_PAYLOAD] = {**error[ERROR_PAYLOAD], "runs": runs,
                                   "missing": [run + 1 for run in missing]}


def _produced(produce: Any, model: str, case: CaseRef, run: int,
              failed: tuple[pytest.Stash, pytest.StashKey[dict[str, Any]]],
              unproduced: dict[int, BaseException]) -> Any:
    """``produce(model, case, run)`` (:func:`produce_or_fail`), or None with why it failed in
    ``unproduced``: a failed call or a project's code that raised leaves this run unknown,
    not the others. What interrupted the work (a time limit, Ctrl-C, a skip) propagates."""
    try:
        return produce_or_fail(produce, model, case, run, keep_error=failed)
    except Exception as exc:
        # A project's generate hook that raised: the tool's failure, as in run 1's setup.
        setattr(exc, TOOL_FAILURE, True)
        unproduced[run] = exc
    except (pytest.skip.Exception, pytest.xfail.Exception):
        raise  # a project's word for the pair (xfail's exception is a kind of fail's)
    except pytest.fail.Exception as exc:
        if getattr(exc, INTERRUPTION, False):
            raise
        unproduced[run] = exc
    return None


def _keep(item: pytest.Item, payload: dict[str, Any] | None,
          results: list[TaskResult | None],
          record: RunsRecord, outputs: list[Any]) -> None:
    """The record on the test (its report's runs section) and on the payload."""
    item.stash[RECORD_KEY] = record
    _attach(item, payload, results, record, outputs)


def _attach(item: pytest.Item, payload: dict[str, Any] | None,
            results: list[TaskResult | None],
            record: RunsRecord, outputs: list[Any]) -> None:
    """The later runs' results — each with its own output when that is not run 1's: a live
    model answers anew in each run, and the report showed run 1's output beside a later
    run's verdicts — and every run's outcome (None: unknown), on the payload the controller
    gathers; the runs in the JUnit properties, the pass rate over the runs whose outcome is
    known (empty when none is). A recorded output is one object in every run: not repeated."""
    if payload is not None and "result" in payload:
        # Kept as the report keeps run 1's (JSON builtins: a NaN a model wrote is null); a
        # recorded output is one object in every run, converted for none of them.
        first: list[Any] = []
        payload["runs"] = []
        for run, result in enumerate(results[1:], start=1):
            if result is None:
                continue  # not produced: listed as not evaluated (_unproduced)
            entry = result.to_dict()
            if run < len(outputs) and outputs[run] is not outputs[0]:
                own = for_report(outputs[run])
                first = first or [for_report(outputs[0])]
                if own != first[0]:
                    entry["output"] = own
            payload["runs"].append(entry)
        payload["passed"] = list(record.outcomes)
        if record.skipped:
            # No outcome of this test's: another test of the pair may have given the run one.
            payload[SKIPPED_RUNS] = list(record.skipped)
    item.user_properties.extend(run_properties(record.outcomes))


_RUN_WORDS = {True: "passed", False: "failed", None: "unknown (the tool failed in it)"}
_RULE_WORDS = {True: "passed", False: "failed",
               None: "undecided (the outcome of a run is unknown)"}


def describe(record: dict[str, Any]) -> str:
    """The runs of a test, for its report."""
    outcomes = record["outcomes"]
    skipped = set(record.get("skipped", ()))
    known = [ok for ok in outcomes if ok is not None]
    passes = sum(known)
    unknown = len(outcomes) - len(known) - len(skipped)
    marks = ", ".join(f"run {i + 1} {'skipped' if i in skipped else _RUN_WORDS[ok]}"
                      for i, ok in enumerate(outcomes))
    flaky = " — flaky: its runs disagree" if 0 < passes < len(known) else ""
    if len(known) == len(outcomes):
        counted = f"{passes} of {len(outcomes)} runs passed"
    elif known:
        counted = f"{passes} of the {len(known)} runs of known outcome passed" + "".join(
            f", {n} {word}" for n, word in ((unknown, "unknown"), (len(skipped), "skipped"))
            if n)
    else:
        counted = f"no run of {len(outcomes)} has a known outcome"
    verdict = _RULE_WORDS[record["passed"]]
    if record["passed"] is False and unknown:
        verdict += (", whatever the unknown run says" if unknown == 1
                    else f", whatever the {unknown} unknown runs say")
    return f"{counted} ({marks}); pass rule {record['rule']}: {verdict}{flaky}"


def status_word(record: dict[str, Any], outcome: str) -> str | None:
    """The verbose word of a flaky test's report (PASSED (flaky 2/3)), else None."""
    known = [ok for ok in record["outcomes"] if ok is not None]
    passes = sum(known)
    if not 0 < passes < len(known):
        return None
    return f"{outcome.upper()} (flaky {passes}/{len(known)})"
