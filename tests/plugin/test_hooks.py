"""The plugin's own hookspecs, implemented in a project's conftest.py."""

from __future__ import annotations

import pytest

from .conftest import MiniProject

CUSTOM_METRIC_CONFTEST = """
from pytest_callqa import Bands, MetricSpec

def pytest_callqa_register_metrics(registry, config):
    spec = MetricSpec(
        id="mentions_refund", task="qa", name="Mentions Refund",
        description="1 when some reason mentions the refund.", scale="0/1",
        threshold="= 1", bands=Bands(good=1.0),
    )

    def compute(case, output, result):
        reasons = " ".join(q["reason"] for q in output["questions"])
        return 1.0 if "refund" in reasons.lower() else 0.0

    registry.register_metric(spec, compute)
"""


def test_register_metrics_adds_a_metric_to_results_scorecard_report_and_listing(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(CUSTOM_METRIC_CONFTEST)
    project.write_tests("""
        import pytest
        from pytest_callqa import assert_metric

        @pytest.mark.callqa(task="qa")
        def test_refund_mentioned(callqa_result):
            assert_metric(callqa_result, "mentions_refund", min=1)
    """)
    result = pytester.runpytest("--callqa-report=report.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["Mentions Refund * 1.000 * 1.000 * = 1"])
    report = project.report()
    # One case: no 95 % interval (a resample of one case is that case).
    assert report["models"]["alpha"]["tasks"]["qa"]["metrics"]["mentions_refund"] == {
        "value": 1.0, "rating": "good", "blocker": False, "interval": None,
        "flagged": 0, "judge_errors": 0}
    listing = pytester.runpytest("--callqa-metrics")
    listing.stdout.fnmatch_lines([
        "  mentions_refund — Mentions Refund",
        "      custom metric: reported, not weighted · scale 0/1 · threshold = 1 (good >= 1, "
        "registered) *",
    ])
    (pytester.path / "conftest.py").unlink()
    plain = pytester.runpytest("--callqa-metrics")
    counts = [int(next(line for line in run.stdout.lines if "metrics registered" in line)
                  .split()[0]) for run in (listing, plain)]
    assert counts[0] == counts[1] + 1


def test_custom_metrics_do_not_leak_into_a_later_session(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(CUSTOM_METRIC_CONFTEST)
    pytester.runpytest("--callqa-metrics").stdout.fnmatch_lines(["*mentions_refund*"])
    (pytester.path / "conftest.py").unlink()
    assert "mentions_refund" not in pytester.runpytest("--callqa-metrics").stdout.str()


def test_scorecard_hook_post_processes_before_printing_and_writing(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest("""
        calls = []

        def pytest_callqa_scorecard(scorecard, config):
            calls.append(1)
            scorecard.notes.append(f"reviewed by the release checklist ({len(calls)} call)")
            del scorecard.models["beta"]
    """)
    project.write_tests("def test_r(callqa_result):\n    pass\n")
    result = pytester.runpytest("--callqa-report=report.json")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["reviewed by the release checklist (1 call)"])
    table_head = next(line for line in result.stdout.lines if line.startswith("Metric "))
    assert "alpha" in table_head and "beta" not in table_head
    report = project.report()
    assert "reviewed by the release checklist (1 call)" in report["notes"]
    assert list(report["models"]) == ["alpha"]


def test_a_model_the_scorecard_hook_removes_leaves_every_report(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before: its results stayed: "results: 8 outputs scored (1 model, 4 cases)", its case
    # entries in the JSON report, its cases in the markdown's worst cases and the HTML's list.
    pytester.makeconftest("""
        def pytest_callqa_scorecard(scorecard, config):
            del scorecard.models["beta"]
    """)
    project.remove_output("beta", "text-appointment")
    project.write_tests("def test_r(callqa_result):\n    pass\n")
    result = pytester.runpytest("--callqa-report=report.json", "--callqa-html=report.html",
                                "--callqa-markdown=summary.md")
    result.stdout.fnmatch_lines(["results: 4 outputs scored (1 model, 4 cases)"])
    assert "not evaluated" not in result.stdout.str()
    report = project.report()
    assert list(report["models"]) == ["alpha"]
    assert {c["model"] for c in report["cases"]} == {"alpha"} and len(report["cases"]) == 4
    assert report["not_evaluated"] == []
    summary = (project.root / "summary.md").read_text(encoding="utf-8")
    assert "4 outputs scored, 1 model" in summary and "| beta |" not in summary
    page = (project.root / "report.html").read_text(encoding="utf-8")
    assert "<h2 id=\"cases\">Cases (4)</h2>" in page and " beta · " not in page


def test_a_scorecard_hook_that_raises_leaves_the_scorecard_and_reports_whole(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before: a traceback from pytest_sessionfinish after every test had passed, no
    # scorecard, no report, exit 1 (which reads as a failed test).
    pytester.makeconftest("""
        def pytest_callqa_scorecard(scorecard, config):
            raise RuntimeError("the dashboard upload\\nfailed")
    """)
    project.write_tests("def test_r(callqa_result):\n    pass\n")
    result = pytester.runpytest("--callqa-report=report.json")
    result.assert_outcomes(passed=8)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines([
        "callqa: the project's pytest_callqa_scorecard hook raised RuntimeError: the "
        "dashboard upload failed — the scorecard and the reports are the run's without it",
        "*callqa scorecard*"])
    assert "Traceback" not in result.stdout.str()
    assert list(project.report()["models"]) == ["alpha", "beta"]


def test_a_misspelt_hook_argument_is_refused(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest("def pytest_callqa_generate(model, golden_case):\n    return None\n")
    result = pytester.runpytest()
    assert result.ret != pytest.ExitCode.OK
    assert "golden_case" in result.stdout.str() + result.stderr.str()


def test_a_custom_metric_whose_code_raises_makes_its_tests_errors(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(CUSTOM_METRIC_CONFTEST.replace(
        'reasons = " ".join(q["reason"] for q in output["questions"])',
        'reasons = output["no such key"]'))
    project.write_tests("""
        import pytest
        from pytest_callqa import assert_metric

        @pytest.mark.callqa(task="qa")
        def test_refund_mentioned(callqa_result):
            assert_metric(callqa_result, "mentions_refund", min=1)
    """)
    result = pytester.runpytest()
    # The project's metric code is broken: an error of the evaluation, never the model's
    # failure (it was reported as "mentions_refund was not scored", a failure).
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*MetricCodeError: the custom metric code raised for model "
                                 "'alpha', case 'qa-refund'*custom metric raised KeyError: "
                                 "'no such key'*"])


@pytest.mark.parametrize(("directory", "workers"), [("zsub", []), ("sub", ["-n", "2"])])
def test_a_metric_registered_in_a_nested_conftest(
    project: MiniProject, pytester: pytest.Pytester, directory: str, workers: list[str]
) -> None:
    # A conftest.py pytest loads with its directory, after another module was collected:
    # the registry built then lacked its metric, and every pair raised a KeyError (one
    # process); the xdist controller, which never loads it, dropped the metric silently.
    nested = pytester.path / directory
    nested.mkdir()
    (nested / "conftest.py").write_text(CUSTOM_METRIC_CONFTEST, encoding="utf-8")
    (nested / "test_b.py").write_text(
        "import pytest\nfrom pytest_callqa import assert_metric\n\n"
        "@pytest.mark.callqa(task='qa')\ndef test_refund(callqa_result):\n"
        "    assert_metric(callqa_result, 'mentions_refund', min=1)\n", encoding="utf-8")
    project.write_tests("def test_a(callqa_result):\n    assert callqa_result.case_id\n",
                        name="test_a")
    result = pytester.runpytest(*workers, "-p", "no:randomly")
    result.assert_outcomes(passed=10)
    if workers:
        result.stdout.fnmatch_lines([
            "qa: metric(s) mentions_refund were scored but are not registered in this "
            "process, so the scorecard leaves them out: register them in the rootdir's "
            "conftest.py (or a plugin), which every xdist process loads"])
    else:
        result.stdout.fnmatch_lines(["Mentions Refund * 1.000 * 1.000 * = 1"])
