"""A test over repeated runs (``--callqa-runs N``, or its ``callqa(runs=N)`` marker): the test
function is called once per run, each time with that run's ``callqa_result`` and
``callqa_output``, and the pass rule (:mod:`pytest_callqa.engine.runs`) makes one outcome of
the N. Other fixtures are set up once, for the test, as pytest always does.

A judge error or a failed generation call in any run stops the test as an error (the tool
failed, not the model); a skip in any run skips it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pytest

from .outcomes import is_tool_failure, produce_or_fail
from .outputs import ModelOutput
from .run.settings import Missing

if TYPE_CHECKING:
    from .engine.core.results import TaskResult
    from .run.catalog import CaseRef
    from .session import CallqaSession

RUN_FIXTURES = frozenset({"callqa_result", "callqa_output"})
# The attribute of a call report that carries its runs (crosses xdist as builtins).
RUNS_ATTR = "callqa_runs"


@dataclass
class RunsRecord:
    """The outcome of each run of a test, and what its pass rule made of them."""

    outcomes: list[bool]
    rule: str
    passed: bool
    failed_runs: list[int]

    def to_dict(self) -> dict[str, Any]:
        return {"outcomes": self.outcomes, "rule": self.rule, "passed": self.passed}


RECORD_KEY = pytest.StashKey[RunsRecord]()


def marker_runs(value: Any) -> str | None:
    """What is wrong with a ``callqa(runs=...)`` value, or None when it is a count >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"runs must be a whole number >= 1, got {value!r}"
    return None


def item_runs(item: pytest.Item, default: int) -> int:
    """The runs of ``item``: its ``callqa(runs=N)`` marker, else the session's setting."""
    marker = item.get_closest_marker("callqa")
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
    # The case as collected (the resolver reads its body when it produces a run).
    params = item.callspec.params
    model, case = cast(str, params["callqa_model"]), cast("CaseRef", params["callqa_case"])
    resolver = state.resolver
    results: list[TaskResult] = []
    if "callqa_result" in funcargs:
        results = [cast("TaskResult", funcargs["callqa_result"])]
        results += [produce_or_fail(resolver.result, model, case, run) for run in range(1, runs)]
    outputs = [funcargs.get("callqa_output")]
    for run in range(1, runs):
        produced = produce_or_fail(resolver.output, model, case, run)
        if isinstance(produced, Missing):
            pytest.skip(f"run {run + 1} of {runs}: {produced.reason}")
        assert isinstance(produced, ModelOutput)
        outputs.append(produced.value)
    argnames = item._fixtureinfo.argnames

    def call(run_result: TaskResult | None, output: Any) -> BaseException | None:
        args = {name: funcargs[name] for name in argnames}
        if "callqa_result" in args:
            args["callqa_result"] = run_result
        if "callqa_output" in args:
            args["callqa_output"] = output
        try:
            item.obj(**args)
        except (pytest.skip.Exception, KeyboardInterrupt):
            raise
        except (Exception, pytest.fail.Exception) as exc:
            if is_tool_failure(exc):
                raise
            return exc
        return None

    failures: dict[int, BaseException] = {}
    for run in range(runs):
        failure = call(results[run] if results else None, outputs[run])
        if failure is not None:
            failures[run] = failure
    outcomes = [run not in failures for run in range(runs)]
    rule = state.settings.pass_rule
    # The engine's run rules load with the first repeated test.
    from .engine.runs import mean_result, metric_specs, rule_passes

    decisive: BaseException | None
    if rule == "mean" and results:
        specs = metric_specs(state.services.registry(), results[0].task)
        decisive = call(mean_result(results, specs), outputs[0])
    elif rule_passes("majority" if rule == "majority" else "all", outcomes):
        decisive = None
    else:
        decisive = failures[min(failures)]
    record = RunsRecord(outcomes=outcomes, rule=rule, passed=decisive is None,
                        failed_runs=sorted(failures))
    item.stash[RECORD_KEY] = record
    _attach(item, item.stash.get(payload_key, None), results, record)
    if decisive is not None:
        raise decisive
    return True


def _attach(item: pytest.Item, payload: dict[str, Any] | None, results: list[TaskResult],
            record: RunsRecord) -> None:
    """The later runs' results and every run's outcome, on the payload the controller
    gathers; the runs in the JUnit properties."""
    if payload is not None and "result" in payload:
        payload["runs"] = [r.to_dict() for r in results[1:]]
        payload["passed"] = list(record.outcomes)
    passes = sum(record.outcomes)
    item.user_properties.extend([
        ("callqa_runs", len(record.outcomes)),
        ("callqa_pass_rate", round(passes / len(record.outcomes), 6)),
        ("callqa_flaky", str(0 < passes < len(record.outcomes)).lower()),
    ])


def describe(record: dict[str, Any]) -> str:
    """The runs of a test, for its report."""
    outcomes = record["outcomes"]
    passes = sum(outcomes)
    marks = ", ".join(f"run {i + 1} {'passed' if ok else 'failed'}"
                      for i, ok in enumerate(outcomes))
    flaky = " — flaky: its runs disagree" if 0 < passes < len(outcomes) else ""
    return (f"{passes} of {len(outcomes)} runs passed ({marks}); pass rule "
            f"{record['rule']}: {'passed' if record['passed'] else 'failed'}{flaky}")


def status_word(record: dict[str, Any], outcome: str) -> str | None:
    """The verbose word of a flaky test's report (PASSED (flaky 2/3)), else None."""
    outcomes = record["outcomes"]
    passes = sum(outcomes)
    if not 0 < passes < len(outcomes):
        return None
    return f"{outcome.upper()} (flaky {passes}/{len(outcomes)})"
