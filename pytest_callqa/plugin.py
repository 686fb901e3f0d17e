"""The pytest plugin: golden-case evaluation as ordinary tests, ending with a scorecard.

Registered through the ``pytest11`` entry point, so it is loaded by every pytest session of
an environment that has pytest-callqa installed. It therefore imports nothing heavy at
module level: the engine (pydantic models, numpy, scikit-learn, rapidfuzz) is imported when
a test first asks for a golden case, never by a run that evaluates nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest

from . import hookspecs
from .garbage import CollectedFrozen, paused, skip_exit_collection
from .gather import REPORT_ATTR, ResultsGatherer, SharedReportValues, hand_over
from .options import CASE_SCHEMA_OPTION, METRICS_OPTION, add_options, ini_name, read_settings
from .outcomes import (
    JUnitToolErrors,
    failed_in_helper,
    keep_setup_error,
    mark_tool_error,
    produce_or_fail,
    redact_report,
    shown_as_error,
)
from .outputs import ModelOutput, for_report, own_copy
from .progress import TerminalProgress
from .pytest_host import PytestHost
from .repeats import RECORD_KEY, RUNS_ATTR, call_runs, describe, item_runs, status_word
from .run.deliver import BaselineError, read_baseline
from .run.junit import result_properties, without_own
from .run.services import LOCAL_SERVER_KEY
from .run.settings import LIVE, CallqaUsageError, Missing, display_path
from .run.spool import GOLDEN, golden_entry, packed
from .run.verdicts import PreflightFailed
from .selection import (
    CASE_FIXTURE,
    CASE_MARKER,
    MODEL_FIXTURE,
    ShardSelection,
    item_pair,
    marker_filter,
    marker_matches,
    pair_of,
)
from .session import CallqaSession
from .snapshot_ids import (
    KEEP_SNAPSHOT_ATTR,
    SHARED_WITH_KEY,
    SNAPSHOT_FIXTURE,
    KeepSnapshots,
    mark_shared_snapshot_files,
    narrowed_selection,
)

if TYPE_CHECKING:
    from .engine.core.cases import GoldenCase
    from .engine.core.results import TaskResult
    from .engine.loading import CaseFileError
    from .run.catalog import CaseRef

EVAL_MARKER = "eval"
EVAL_FIXTURES = frozenset({CASE_FIXTURE, MODEL_FIXTURE, "callqa_output", "callqa_result"})

T = TypeVar("T")

PREFLIGHT_HINT = "--no-callqa-preflight skips this check"

SESSION_KEY = pytest.StashKey[CallqaSession]()
FROZEN_KEY = pytest.StashKey[CollectedFrozen]()
PAYLOAD_KEY = pytest.StashKey[dict[str, Any]]()
# How many collected tests of this process need each (model, case id) pair's result.
USERS_KEY = pytest.StashKey[dict[tuple[str, str], int]]()
# pytest keeps every report to the end: an evaluation test's keep one copy of their values.
_SHARED = SharedReportValues()


# --- registration ---------------------------------------------------------------------------


@pytest.hookimpl
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Fires once at start-up: adds the ``pytest_callqa_*`` hookspecs."""
    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl
def pytest_addoption(parser: pytest.Parser) -> None:
    """Fires once at start-up: the ``--callqa-*`` option group and its ini twins."""
    add_options(parser)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    """Fires once per process after option parsing: markers, settings and session state."""
    config.addinivalue_line(
        "markers",
        f"{EVAL_MARKER}: an LLM evaluation test (added automatically to every test that uses "
        "a callqa fixture; select with -m eval, skip with -m 'not eval')",
    )
    config.addinivalue_line(
        "markers",
        f"{CASE_MARKER}(task=None, tags=(), runs=None): give this test only the golden cases of "
        "this task (or list of tasks) that carry every one of these tags; runs=N evaluates "
        "each of them N times (--callqa-runs)",
    )
    # Cleanups run last-registered first: this one, registered before pytest's check for
    # exceptions raised in finalisers registers its own, runs after that check's collection.
    config.stash[FROZEN_KEY] = CollectedFrozen()
    config.add_cleanup(config.stash[FROZEN_KEY].thaw)
    settings = read_settings(config)
    if settings.baseline is not None and not hasattr(config, "workerinput"):
        # A baseline that cannot be read stops the run before its tests, not after them.
        try:
            read_baseline(settings.baseline)
        except BaselineError as exc:
            raise pytest.UsageError(f"callqa: {exc}") from None
    # The command line narrowed the ini file's models or cases: the others' snapshots stay,
    # and the gate reads their cases as not selected.
    narrowed = narrowed_selection(config, settings)
    state = CallqaSession(PytestHost(config, narrowed), settings)
    config.stash[SESSION_KEY] = state
    if settings.policies:
        # A policy that cannot be applied stops the run before anything is collected.
        from .engine.policy import PolicyError

        try:
            state.services.registry()
        except PolicyError as exc:
            raise pytest.UsageError(f"callqa: policy: {exc}") from None
    shard = None if settings.shard is None else ShardSelection(settings.shard)
    # Workers only score; their results reach the controller on the test reports.
    if not state.is_worker:
        config.pluginmanager.register(ResultsGatherer(state, shard), "callqa-results")
        if getattr(config.option, "xmlpath", None):
            config.pluginmanager.register(JUnitToolErrors(config), "callqa-junit-errors")
    config.pluginmanager.register(KeepSnapshots(config, narrowed), "callqa-keep-snapshots")
    if shard is not None:
        config.pluginmanager.register(shard, "callqa-shard")


def _state(config: pytest.Config) -> CallqaSession:
    return config.stash[SESSION_KEY]


# --- --callqa-metrics and --callqa-case-schema --------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | pytest.ExitCode | None:
    """Fires once, before collection: ``--callqa-metrics`` lists the metrics and exits,
    ``--callqa-case-schema PATH`` writes the case-file schema and exits."""
    schema = config.getoption(ini_name(CASE_SCHEMA_OPTION))
    if config.getoption(ini_name(METRICS_OPTION)) or schema:
        # Only these two options need pytest's session wrapper,
        from _pytest.main import wrap_session

        # and the task families (the listing, the schema).
        from .listing import metrics_or_schema

        return wrap_session(config, lambda config, _session: metrics_or_schema(
            config.get_terminal_writer(), _state(config).services.registry(),
            None if config.getoption(ini_name(METRICS_OPTION))
            else config.invocation_params.dir / schema))
    return None


# --- collection ---------------------------------------------------------------------------


@pytest.hookimpl
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Fires for each test function at collection: parametrizes tests that use
    ``callqa_case`` over the golden cases and tests that use ``callqa_model`` over the models,
    with ids ``<model>-<case_id>``."""
    names = set(metafunc.fixturenames)
    wants_case, wants_model = CASE_FIXTURE in names, MODEL_FIXTURE in names
    if not (wants_case or wants_model):
        return
    state = _state(metafunc.config)
    cases: list[CaseRef] = []
    try:
        with paused():  # the first call loads the catalogue and the engine, kept to the end
            models = state.catalog.models() if wants_model else []
            if wants_case:
                tasks, tags = marker_filter(metafunc, state.services.registry())
                cases = state.catalog.select(tasks, tags)
                if wants_model:
                    state.catalog.check_recorded_cases()
    except CallqaUsageError as exc:
        raise pytest.Collector.CollectError(str(exc)) from None
    if wants_case and not cases:
        # One skipped test that says why, rather than pytest's generic empty-parameter-set skip.
        argnames = [n for n in (MODEL_FIXTURE, CASE_FIXTURE) if n in names]
        skip = pytest.mark.skip(reason=f"no golden case{marker_matches(metafunc)}")
        metafunc.parametrize(argnames, [pytest.param(*[None] * len(argnames), marks=skip)],
                             ids=["no-case"], indirect=True)
        return
    if wants_case and wants_model:
        metafunc.parametrize(
            [MODEL_FIXTURE, CASE_FIXTURE],
            [(m, c) for m in models for c in cases],
            ids=[f"{m}-{c.id}" for m in models for c in cases],
            indirect=True,
        )
    elif wants_case:
        metafunc.parametrize(CASE_FIXTURE, cases, ids=[c.id for c in cases], indirect=True)
    else:
        metafunc.parametrize(MODEL_FIXTURE, models, ids=models, indirect=True)


class InvalidCaseFile(pytest.Item):
    """A golden-case file that could not be loaded, reported as an error of its own.

    A real collection error would stop pytest before any test runs; an erroring item names
    the file and each bad field while the cases of every other file are still evaluated.
    """

    def __init__(self, *, error: CaseFileError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error
        self.add_marker(EVAL_MARKER)

    def setup(self) -> None:
        self.stash[PAYLOAD_KEY] = {"case_file": {
            "path": self.location[0], "problems": list(self.error.problems)}}
        pytest.fail(str(self.error), pytrace=False)

    def runtest(self) -> None:
        """Never reached: :meth:`setup` reports the file as an error."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"golden case file {self.name}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Fires after collection, before ``-m``/``-k`` deselection (hence tryfirst): marks every
    test that uses a callqa fixture with ``eval`` and adds one erroring item per golden-case
    file that could not be loaded."""
    uses_cases = evaluates = False
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & EVAL_FIXTURES:
            item.add_marker(EVAL_MARKER)
            uses_cases = uses_cases or CASE_FIXTURE in fixtures
            evaluates = True
    if evaluates:
        config.stash[FROZEN_KEY].wanted = True
        skip_exit_collection()
    # Before a shard's selection: the other shard's tests write to the same repository.
    mark_shared_snapshot_files(items)
    if not uses_cases:
        return
    try:
        errors = _state(config).catalog.files().errors
    except CallqaUsageError:
        return  # already reported as the collection error of the modules that need cases
    bad = []
    for error in errors:
        rel = display_path(error.path, config.rootpath)
        bad.append(InvalidCaseFile.from_parent(
            session, name=rel, path=error.path, nodeid=f"{rel}::callqa-case-file", error=error,
        ))
    items[:0] = bad


@pytest.hookimpl
def pytest_collection_finish(session: pytest.Session) -> None:
    """Fires once collection and deselection are done: remembers which (model, case) pairs
    this process's tests need an output and a scored result for, so they are produced and
    judged in batches rather than one test at a time, has the metric registry built again
    now that every ``conftest.py`` is loaded, and freezes what collection built
    (garbage.py)."""
    state = _state(session.config)
    state.services.registry_after_collection()
    users: dict[tuple[str, str], int] = {}
    for item in session.items:
        fixtures = getattr(item, "fixturenames", ())
        if "callqa_output" not in fixtures:
            continue
        model, case = item_pair(item)
        if isinstance(model, str) and case is not None:
            state.resolver.need(model, case, scored="callqa_result" in fixtures,
                                runs=item_runs(item, state.settings.runs))
            users[(model, case.id)] = users.get((model, case.id), 0) + 1
    session.config.stash[USERS_KEY] = users
    session.config.stash[FROZEN_KEY].freeze()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    """Wraps the test loop. Before the first test, the only process, or each xdist worker,
    sends the judge and generation calls of its share of the pairs concurrently, with a
    progress indication (the xdist controller, which runs no test, checks the endpoints); a
    run answered wholly from the cache sends nothing. A single process's judge batch goes on
    beside its tests; after the last test it has ended, and a run that stops early (``-x``,
    Ctrl-C: pytest raises out of its loop) cancels the rest, which no test will read."""
    config = session.config
    # --setup-plan sets no fixture up: nothing will ask for a result.
    if not (config.option.collectonly or getattr(config.option, "setupplan", False)) and not (
            session.testsfailed and not config.option.continue_on_collection_errors):
        _resolve_up_front(config)  # else pytest's own runtestloop stops the run
    try:
        outcome = yield
    except BaseException:
        _state(config).resolver.close(interrupted=True)
        raise
    _state(config).resolver.close()
    return outcome


def _resolve_up_front(config: pytest.Config) -> None:
    state = _state(config)
    controller = config.pluginmanager.hasplugin("dsession")
    if not state.is_worker and not controller:
        state.progress = TerminalProgress.of(config)
    try:
        state.resolve_up_front(controller=controller)
    except PreflightFailed as exc:
        if not state.is_worker:  # a worker's controller has stopped the run with the reason
            raise _preflight_error(exc.problems) from None
    except CallqaUsageError as exc:  # e.g. the local judge's server did not start
        raise pytest.UsageError(str(exc)) from None


def _start_local_server(state: CallqaSession) -> None:
    """Start the local judge's server (once; a failure is a usage error with its log)."""
    try:
        state.services.local_info()
    except CallqaUsageError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Fires once per process before collection: the xdist controller starts the local
    judge's server before its workers start, so every worker calls the same one."""
    config = session.config
    state = _state(config)
    # --collect-only and --setup-plan judge nothing: loading the model would be all they did.
    if state.settings.local_judge and config.pluginmanager.hasplugin("dsession") and not (
            config.option.collectonly or getattr(config.option, "setupplan", False)):
        _start_local_server(state)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Fires in the xdist controller as each worker has collected: the first time, the
    engine the scorecard needs is set to load in a daemon thread while the workers judge and
    test, once they are past loading the judge's client (session.py), not after the last test."""
    _state(node.config).preload_once_workers_send()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Fires in the xdist controller for each worker it starts: hands the worker the local
    judge server's address and context window."""
    services = _state(node.config).services
    if services.local_server is not None and services.local_server.info is not None:
        node.workerinput[LOCAL_SERVER_KEY] = services.local_server.info.to_dict()


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    """Fires once per process at the very end, interrupted runs included: stops the local
    judge's server this process started."""
    state = config.stash.get(SESSION_KEY, None)
    if state is not None:
        state.services.close()
        if state.summary.has_evaluations:
            skip_exit_collection()


def _preflight_error(problems: list[str]) -> pytest.UsageError:
    return pytest.UsageError(
        "callqa: preflight: " + "\ncallqa: preflight: ".join(problems)
        + f"\n(no test was run; {PREFLIGHT_HINT})")


# --- fixtures -----------------------------------------------------------------------------


def _param(request: pytest.FixtureRequest, name: str) -> Any:
    if not hasattr(request, "param"):
        pytest.fail(
            f"{name} is parametrized at collection: request it as an argument of the test "
            "function (or of a fixture it uses), not through request.getfixturevalue()",
            pytrace=False,
        )
    return request.param


def _call(request: pytest.FixtureRequest, produce: Callable[[str, CaseRef], T], model: str,
          case: CaseRef) -> T:
    """``produce(model, case)``, a pair an error leaves unevaluated kept in the payload."""
    return produce_or_fail(produce, model, case, keep_error=(request.node.stash, PAYLOAD_KEY))


@pytest.fixture
def callqa_case(request: pytest.FixtureRequest) -> GoldenCase:
    """The golden case of this test; the test runs once per case that matches its
    ``@pytest.mark.callqa(task=..., tags=[...])`` marker (every case without one)."""
    ref = cast("CaseRef", _param(request, CASE_FIXTURE))
    try:
        return _state(request.config).catalog.case(ref)
    except CallqaUsageError as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)


@pytest.fixture
def callqa_model(request: pytest.FixtureRequest) -> str:
    """The model under evaluation; the test runs once per configured model
    (``--callqa-models``, or every directory of ``--callqa-outputs``)."""
    return cast(str, _param(request, MODEL_FIXTURE))


@pytest.fixture
def callqa_output(request: pytest.FixtureRequest, callqa_model: str,
                  callqa_case: GoldenCase) -> Any:
    """The test's own copy of what the model returned for the case: parsed JSON, or the raw
    text when it is not JSON. Produced by ``pytest_callqa_generate``, or read from the outputs
    directory; a missing output skips the test (``--callqa-missing error`` makes it an error)."""
    state = _state(request.config)
    # The case as collected: the resolver reads its body when it produces the pair.
    produced = _call(request, state.resolver.output, callqa_model, item_pair(request.node)[1])
    if isinstance(produced, Missing):
        request.node.stash[PAYLOAD_KEY] = {"missing": produced.to_dict()}
        if state.settings.missing == "error":
            pytest.fail(produced.reason, pytrace=False)
        pytest.skip(produced.reason)
    assert isinstance(produced, ModelOutput)
    return own_copy(produced.value)


@pytest.fixture
def callqa_result(request: pytest.FixtureRequest, callqa_model: str, callqa_case: GoldenCase,
                  callqa_output: Any) -> TaskResult:
    """The engine's ``TaskResult`` for this model's output on this case, scored with the
    configured judge. Whether the test passes or fails, it reaches the scorecard."""
    state = _state(request.config)
    result = _call(request, state.resolver.result, callqa_model, item_pair(request.node)[1])
    golden = [callqa_case.id, golden_entry(callqa_case), state.catalog.position(callqa_case.id)]
    as_scored = cast(ModelOutput, state.resolver.output(callqa_model, item_pair(request.node)[1]))
    request.node.stash[PAYLOAD_KEY] = {"result": result.to_dict(),
                                       "output": for_report(as_scored.value), GOLDEN: golden}
    if getattr(request.config.option, "xmlpath", None):
        # JUnit <property> elements: a CI dashboard shows every test's metrics. Without a
        # JUnit file nobody reads them, and every report would carry them.
        request.node.user_properties.extend(result_properties(result))
    return result


@pytest.fixture
def callqa_snapshot(request: pytest.FixtureRequest, snapshot: Any) -> Any:
    """syrupy's ``snapshot`` with :class:`pytest_callqa.snapshot.JudgeRecordExtension`:
    ``assert callqa_result.judge_record == callqa_snapshot`` fails when what the judge says
    changes, until ``pytest --snapshot-update`` accepts it."""
    runs = item_runs(request.node, _state(request.config).settings.runs)
    if runs > 1:
        # syrupy numbers a test's assertions: runs 2..N would be checked against snapshots
        # a single run never wrote, and read as a flaky model.
        pytest.fail(f"callqa_snapshot: this test runs {runs} times (--callqa-runs or "
                    "callqa(runs=...)), and a snapshot pins one verdict of one run: give it "
                    "@pytest.mark.callqa(runs=1)", pytrace=False)
    shared = request.node.stash.get(SHARED_WITH_KEY, None)
    if shared:
        pytest.fail(f"callqa_snapshot: this test's snapshot file would also be that of "
                    f"{', '.join(shared)} (syrupy leaves \\ / ? * : | \" < > and control "
                    "characters out of file names): rename the case or model so the ids "
                    "differ in other characters", pytrace=False)
    # syrupy's JSON extension and pydantic load only for a test that takes a snapshot.
    from .snapshot import JudgeRecordExtension, judged

    return judged(snapshot.use_extension(JudgeRecordExtension))


@pytest.hookimpl(trylast=True)
def pytest_callqa_generate(model: str, case: GoldenCase, config: pytest.Config) -> Any:
    """Fires for a (model, case) pair no other implementation produced an output for: a
    live model (``name=model@base_url``) is generated by the built-in OpenAI-compatible
    generator, in one concurrent batch with the session's other pairs; any other model's
    output is read from the recorded file in the outputs directory."""
    state = _state(config)
    if state.catalog.live_spec(model) is not None:
        return LIVE
    return state.resolver.recorded_output(model, case)


@pytest.hookimpl
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fires once per process, after the last test: an xdist worker hands its call counters
    (requests, cache hits, tokens, spend) and its catalogue's fingerprint to the controller,
    as builtins (gather.hand_over); the controller freezes what it built (garbage.py)."""
    state = _state(session.config)
    hand_over(session.config, state)
    if state.summary.has_evaluations and session.config.pluginmanager.hasplugin("dsession"):
        # The xdist controller collects nothing and runs no test: what it holds by now (its
        # workers' reports, the scorecard) lives to the end, and pytest's closing
        # collections would walk it twice more for nothing (~0.08 s of a -n 2 run's end).
        frozen = session.config.stash[FROZEN_KEY]
        frozen.wanted = True
        frozen.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Fires to call each test function: an evaluation test over several runs is called once
    per run and passes by the pass rule (repeats.py); any other is left to pytest."""
    return call_runs(pyfuncitem, _state(pyfuncitem.config), PAYLOAD_KEY)


# --- results across processes -------------------------------------------------------------


@pytest.hookimpl
def pytest_report_teststatus(report: pytest.TestReport,
                             config: pytest.Config) -> tuple[str, str, str] | None:
    """Fires for every report: a test the tool stopped (a verdict the judge could not give,
    a call that failed, work interrupted) is shown and counted as an error, not as a failure
    of the model; so is an evaluation test whose xdist worker died (the environment's
    failure, not the model's: gather.py lists its pair as not evaluated)."""
    if shown_as_error(report):
        return "error", "E", "ERROR"
    runs = getattr(report, RUNS_ATTR, None)
    if report.when == "call" and isinstance(runs, dict):
        word = status_word(runs, report.outcome)
        if word is not None:
            return report.outcome, "." if report.passed else "F", word
    return None


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Fires for every report, here after every other plugin has seen it (the controller's
    gatherer spooled the payload; an xdist worker sent it): pytest's terminal reporter keeps
    every report until the end of the run, and the payload must not stay with it."""
    if hasattr(report, REPORT_ATTR):
        delattr(report, REPORT_ATTR)
    _SHARED.share(report, EVAL_MARKER)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Wraps each test's run, every attempt of it (a plugin that runs a failed test again,
    pytest-rerunfailures, does so inside this hook). After it, the pair's output and result
    are dropped once the last collected test that needs them has run in this process (under
    xdist, tests of a pair that went to another worker keep them, as before)."""
    outcome = yield
    users, key = item.config.stash.get(USERS_KEY, {}), pair_of(item)
    if key in users:
        users[key] -= 1
        if users[key] == 0:
            del users[key]
            _state(item.config).resolver.forget(*key)
    return outcome


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Any:
    """Fires for each phase of each test, around pytest's own handling (xfail's included):
    the teardown report carries the test's result (or why it was not evaluated) as
    builtins, which xdist ships to the controller."""
    report = yield
    redact_report(report)
    stopped = mark_tool_error(report, call)
    # A test that errored before it could compare its snapshot (in its fixtures, or on the
    # tool's failure): the snapshot accepted before stays (snapshot_ids.KeepSnapshots).
    if SNAPSHOT_FIXTURE in getattr(item, "fixturenames", ()) and (
            (call.when == "setup" and (report.failed or hasattr(report, "wasxfail"))) or
            (call.when == "call" and stopped)):
        setattr(report, KEEP_SNAPSHOT_ATTR, True)
    if call.when == "setup" and report.failed:
        keep_setup_error(item.stash, PAYLOAD_KEY, *item_pair(item), call)
    record = item.stash.get(RECORD_KEY, None)
    if call.when == "call" and record is not None:
        setattr(report, RUNS_ATTR, record.to_dict())
        report.sections.append(("callqa runs", describe(record.to_dict())))
    if call.when == "call" and report.failed and failed_in_helper(call.excinfo):
        # An assertion helper's message already names the model, the case and every failing
        # metric: that is the report, without the traceback around it.
        report.longrepr = str(call.excinfo.value)  # type: ignore[union-attr]
    if call.when == "teardown":
        payload = item.stash.get(PAYLOAD_KEY, None)
        if payload is not None:
            setattr(report, REPORT_ATTR, packed(payload))
            # The item lives as long as the session: it must not keep every result.
            del item.stash[PAYLOAD_KEY]
        # This attempt's report has its properties; another attempt records its own.
        item.user_properties[:] = without_own(item.user_properties)
    return report


