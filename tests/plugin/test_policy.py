"""The team's own bars: a policy in pyproject.toml (or a file of its own) changes a metric's
rating, its blocker rule and so the gate, the assertion helpers' default and the listing,
and a policy that cannot be applied is a usage error naming the key."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from .conftest import PYPROJECT, MiniProject

KEYWORDS = """
import pytest
from pytest_callqa import assert_metric

@pytest.mark.callqa(task="entity")
def test_keywords(callqa_result):
    assert_metric(callqa_result, "keyword_f1")
"""


def with_policy(project: MiniProject, policy: str) -> None:
    (project.root / "pyproject.toml").write_text(PYPROJECT + policy, encoding="utf-8")


def test_a_threshold_changes_the_rating_the_default_assertion_and_the_listing(
    project: MiniProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    project.write_tests(KEYWORDS)
    before = pytester.runpytest("--callqa-report=before.json")
    before.assert_outcomes(passed=1, failed=1)  # beta's keyword F1 0.8 fails the 0.90 bar
    with_policy(project, "\n[tool.callqa.metrics.keyword_f1]\nthreshold = 0.75\n")
    after = pytester.runpytest("--callqa-report=after.json")
    after.assert_outcomes(passed=2)
    [beta] = [c for c in project.report("after.json")["cases"] if c["model"] == "beta"]
    assert beta["metrics"]["keyword_f1"]["rating"] == "good"
    assert beta["metrics"]["keyword_f1"]["details"]["threshold"] == ">= 0.75"
    row = next(line for line in scorecard_of(after.stdout.str()).splitlines()
               if line.startswith("Keyword F1"))
    assert " x" not in row and ">= 0.75" in row
    specs = project.report("after.json")["metric_specs"]["entity"]
    assert next(s for s in specs if s["id"] == "keyword_f1")["bands"]["good"] == 0.75
    # The header says which bars the run was held to (a disabled blocker left no trace but
    # the JSON report).
    assert "policy (pyproject.toml): entity.keyword_f1 >= 0.75" in after.stdout.str()
    assert "policy (" not in before.stdout.str()
    with_policy(project, "\n[tool.callqa.metrics.keyword_f1]\nthreshold = 0.75\n"
                         "\n[tool.callqa.metrics.config_adherence]\ndisabled = true\n")
    disabled = pytester.runpytest().stdout.str()
    assert ("policy (pyproject.toml): entity.config_adherence disabled; entity.keyword_f1 "
            ">= 0.75") in disabled
    listing = pytester.runpytest("--callqa-metrics").stdout.str()
    assert "threshold >= 0.75 (good >= 0.75, pyproject.toml)" in listing
    assert "threshold >= 0.90 (good >= 0.9, acceptable >= 0.8, built-in)" in listing


@pytest.mark.parametrize("ini", ["pytest.toml", "pytest.ini"])
def test_the_policy_of_a_pyproject_toml_beside_another_ini_file_is_applied(
    project: MiniProject, pytester: pytest.Pytester, ini: str
) -> None:
    # pytest reads its keys from pytest.toml or pytest.ini first; the team's bars written in
    # pyproject.toml beside it were ignored without a word.
    project.write_tests(KEYWORDS)
    keys = PYPROJECT.removeprefix("[tool.pytest.ini_options]\n")
    if ini == "pytest.toml":
        keys = keys.replace('addopts = "-p no:cacheprovider"',
                            'addopts = ["-p", "no:cacheprovider"]')
    else:
        keys = keys.replace('filterwarnings = ["error"]', "filterwarnings = error").replace(
            '"', "")
    (project.root / ini).write_text("[pytest]\n" + keys, encoding="utf-8")
    (project.root / "pyproject.toml").write_text(
        "[tool.callqa.metrics.keyword_f1]\nthreshold = 0.75\n", encoding="utf-8")
    pytester.runpytest().assert_outcomes(passed=2)
    listing = pytester.runpytest("--callqa-metrics").stdout.str()
    assert "threshold >= 0.75 (good >= 0.75, pyproject.toml)" in listing


def test_the_rootdirs_pyproject_toml_policy_applies_with_an_ini_file_elsewhere(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # `-c ci/pytest.ini`: no pyproject.toml beside the ini file; the project's own, at the
    # rootdir, holds the team's bars (they were ignored without a word).
    project.write_tests(KEYWORDS)
    (project.root / "ci").mkdir()
    keys = PYPROJECT.removeprefix("[tool.pytest.ini_options]\n").replace(
        'filterwarnings = ["error"]', "filterwarnings = error").replace('"', "").replace(
        "= cases", "= ../cases").replace("= outputs", "= ../outputs")
    (project.root / "ci" / "pytest.ini").write_text("[pytest]\n" + keys, encoding="utf-8")
    (project.root / "pyproject.toml").write_text(
        "[tool.callqa.metrics.keyword_f1]\nthreshold = 0.75\n", encoding="utf-8")
    listing = pytester.runpytest("-c", "ci/pytest.ini", "--rootdir", ".", "--callqa-metrics")
    assert "threshold >= 0.75 (good >= 0.75, pyproject.toml)" in listing.stdout.str()


def test_a_policy_blocker_is_a_new_blocker_for_the_gate(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("def test_scored(callqa_result):\n    assert callqa_result.case_id\n")
    pytester.runpytest("--callqa-report=base.json").assert_outcomes(passed=8)
    with_policy(project, "\n[tool.callqa.metrics.keyword_recall]\n"
                         "threshold = 0.9\nblocker = true\n")
    gated = pytester.runpytest("--callqa-baseline=base.json", "--callqa-report=now.json")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gate = project.report("now.json")["gate"]
    assert gate["verdict"] == "fail"
    assert any(r["model"] == "beta" and r.get("kind") == "new blocker"
               for r in gate["regressions"]), json.dumps(gate["regressions"])[:2000]


@pytest.mark.parametrize(("policy", "problem"), [
    ("[tool.callqa.metrics.keyword_f2]\nthreshold = 0.8\n",
     "tool.callqa.metrics.keyword_f2: unknown metric 'keyword_f2'"),
    ("[tool.callqa.metrics.keyword_f1]\nweight = 0.5\n",
     "tool.callqa.metrics.keyword_f1.weight: weights cannot be changed by a policy"),
    ("[tool.callqa.metrics.keyword_f1]\nthreshold = 1.5\n",
     "tool.callqa.metrics.keyword_f1.threshold: 1.5 is off the metric's scale"),
    ("[tool.callqa.metrics.response_structure_compliance]\nthreshold = 1\n",
     "exists in several tasks"),
    ("[tool.callqa.metrics.keyword_f1]\nthreshold = 0.9\n"
     "[tool.callqa.metrics.\"entity.keyword_f1\"]\nthreshold = 0.5\n",
     "tool.callqa.metrics.entity.keyword_f1: metric 'entity.keyword_f1' is already set by "
     "tool.callqa.metrics.keyword_f1"),
], ids=["unknown-metric", "weight", "off-scale", "ambiguous", "named-twice"])
def test_a_bad_policy_is_a_usage_error_naming_the_key(
    project: MiniProject, pytester: pytest.Pytester, policy: str, problem: str
) -> None:
    with_policy(project, "\n" + policy)
    project.write_tests(KEYWORDS)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert problem in result.stderr.str()
    assert "pyproject.toml" in result.stderr.str()


def test_a_policy_file_of_its_own(project: MiniProject, pytester: pytest.Pytester) -> None:
    (project.root / "bars.toml").write_text(
        "[metrics.\"entity.keyword_f1\"]\nthreshold = 0.75\n", encoding="utf-8")
    project.write_tests(KEYWORDS)
    pytester.runpytest("--callqa-policy=bars.toml").assert_outcomes(passed=2)
    missing = pytester.runpytest("--callqa-policy=nowhere.toml")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    assert "nowhere.toml does not exist" in missing.stderr.str()


def test_a_toml_file_that_is_not_utf8_is_a_usage_error_naming_it(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # A policy saved as UTF-16 (PowerShell's `>`) ended the run in an INTERNALERROR.
    policy = "[metrics.keyword_f1]\nthreshold = 0.9\n"
    (project.root / "bars.toml").write_bytes(policy.encode("utf-16"))
    project.write_tests(KEYWORDS)
    result = pytester.runpytest("--callqa-policy=bars.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--callqa-policy file *bars.toml cannot be read: it is not "
                                 "UTF-8 text (byte 0); save it as UTF-8*"])
    # The rootdir's pyproject.toml, which the plugin reads for its policy and pytest does
    # not (`-c ci/pytest.ini`).
    (project.root / "ci").mkdir()
    keys = PYPROJECT.removeprefix("[tool.pytest.ini_options]\n").replace(
        'filterwarnings = ["error"]', "filterwarnings = error").replace('"', "").replace(
        "= cases", "= ../cases").replace("= outputs", "= ../outputs")
    (project.root / "ci" / "pytest.ini").write_text("[pytest]\n" + keys, encoding="utf-8")
    (project.root / "pyproject.toml").write_bytes(f"[tool.callqa.{policy[1:]}".encode("utf-16"))
    result = pytester.runpytest("-c", "ci/pytest.ini", "--rootdir", ".")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the project's pyproject.toml *pyproject.toml cannot be read: "
                                 "it is not UTF-8 text*"])


def test_a_task_pass_bar_is_the_helpers_default_and_a_tolerance_reaches_the_gate(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("""
import pytest
from pytest_callqa import assert_qa_score

@pytest.mark.callqa(task="qa")
def test_qa(callqa_result):
    assert_qa_score(callqa_result, allow_blockers=True)
""")
    no_bar = pytester.runpytest()
    no_bar.assert_outcomes(failed=2)
    assert "needs min_score, or a pass_bar for the qa task" in no_bar.stdout.str()
    with_policy(project, "\n[tool.callqa.tasks.qa]\npass_bar = 0.6\n")
    pytester.runpytest().assert_outcomes(passed=2)  # beta's 0.7 clears 0.6
    with_policy(project, "\n[tool.callqa.tasks.qa]\npass_bar = 0.75\n")
    pytester.runpytest().assert_outcomes(passed=1, failed=1)


def test_a_metric_tolerance_is_passed_to_the_gate() -> None:
    from pytest_callqa.engine.policy import apply_policy
    from pytest_callqa.engine.registry import default_registry

    registry = default_registry().copy()
    apply_policy(registry, {"metrics": {"keyword_f1": {"tolerance": 0.05}},
                            "tasks": {"entity": {"pass_bar": 0.8}}}, "bars.toml")
    assert registry.tolerances == {"entity.keyword_f1": 0.05}
    assert registry.pass_bars == {"entity": 0.8}
    # The threshold itself is untouched by a tolerance alone.
    assert registry.metric("entity", "keyword_f1").bands == \
        default_registry().metric("entity", "keyword_f1").bands


def test_the_runs_scorecard_counts_a_blocker_no_estimate_was_made_of_as_undecided(
    project: MiniProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    # The heuristic judge cannot estimate fluency: the tests said the blocker was unknown,
    # while the run's scorecard (built from what each test sent the controller, without the
    # metric's details) said the task was decided, no disqualification in doubt.
    with_policy(project, "\n[tool.callqa.metrics.target_fluency]\nthreshold = 0.85\n"
                         "acceptable = 0.7\nblocker = true\n")
    project.write_tests("""
        import pytest
        from pytest_callqa import assert_no_blockers

        @pytest.mark.callqa(task="translation")
        def test_no_blockers(callqa_result):
            assert_no_blockers(callqa_result)
    """)
    for workers in ([], ["-n", "2"]):
        result = pytester.runpytest(*workers, "--callqa-models=alpha",
                                    "--callqa-report=report.json")
        result.assert_outcomes(errors=1)
        agg = project.report("report.json")["models"]["alpha"]["tasks"]["translation"]
        assert (agg["blocker_unknown_cases"], agg["unknown_blockers"]) == (1, ["target_fluency"])
        assert agg["disqualification_unknown"] is True
        assert "[!?] alpha: disqualification for translation unknown" in scorecard_of(
            result.stdout.str())
