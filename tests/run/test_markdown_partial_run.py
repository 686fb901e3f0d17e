"""A partial run — stopped early, or asked for part of the suite — says so in the pull-request
summary and the HTML report as the terminal's scorecard does: both read as a whole run's,
and a model none of whose tests ran was simply absent."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_callqa.run.html import render_html
from pytest_callqa.run.markdown import render_markdown

from .test_html import HOSTILE, make_report

STOPPED = ("run stopped early (stopping after 1 failures): the scorecard holds only the "
           "results of the tests that ran before it stopped")
SELECTED = ("selection: -k 'qa', --deselect test_eval.py::test_unit: the scorecard holds only "
            "the results of the selected tests")
PARTIAL: dict[str, Any] = {"stopped_early": "stopping after 1 failures",
                           "selection": {"keyword": "qa",
                                         "deselect": ["test_eval.py::test_unit"]}}


def test_the_summary_says_a_partial_run_before_its_table(report: dict[str, Any]) -> None:
    report["run"].update(PARTIAL)
    text = render_markdown(report)
    top = text.split("### Scorecard", 1)[0]
    assert f"⚠️ {STOPPED}\n" in top
    assert f"⚠️ {SELECTED}\n" in top


def test_the_html_report_says_a_partial_run_at_its_top() -> None:
    report = make_report()
    report["run"].update(PARTIAL)
    top = render_html(report).split("<nav>", 1)[0]
    assert f'<p class="partial">{STOPPED}</p>' in top
    assert ('<p class="partial">selection: -k &#x27;qa&#x27;, --deselect '
            "test_eval.py::test_unit: the scorecard holds only the results of the selected "
            "tests</p>") in top


@pytest.mark.parametrize("run", [{"stopped_early": None, "selection": {}}, {}],
                         ids=["whole-run", "no-record"])
def test_a_whole_run_says_nothing_of_it(report: dict[str, Any], run: dict[str, Any]) -> None:
    report["run"].update(run)
    assert "⚠️" not in render_markdown(report)
    page = make_report()
    page["run"].update(run)
    assert 'class="partial"' not in render_html(page)


def test_the_selection_is_shown_as_written(report: dict[str, Any]) -> None:
    # A -k expression and node ids are the user's text: not markup in either output.
    report["run"]["selection"] = {"keyword": HOSTILE, "deselect": ["t.py::test_[@team *x*]"]}
    text = render_markdown(report)
    line = next(line for line in text.splitlines() if "selection:" in line)
    assert line.startswith(r"⚠️ selection: -k '\</script\>\<script\>window.\_\_pwned")
    assert r"\<img src=x" in line and "@team" not in line and r"\*x\*" in line
    page = make_report()
    page["run"]["selection"] = report["run"]["selection"]
    html = render_html(page)
    assert "<script>window" not in html and "<img" not in html
    assert '<p class="partial">selection: -k &#x27;&lt;/script&gt;' in html
