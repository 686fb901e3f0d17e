"""A calibrating run's verdict and per-metric table in the markdown summary and the HTML
report, as the terminal prints them: runs of the example calibration set (a subset of its
cases, which fails call_intent_match's kappa and leaves most labels unevaluated), and the
same set run without --callqa-calibrate, whose files say nothing of a calibration."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.run.html import render_html
from pytest_callqa.run.markdown import render_markdown

EXAMPLE_SET = Path(__file__).resolve().parents[2] / "example_project" / "calibration"
# Two dialogues: 3 call-intent pairs (kappa 0.57), 4 fabrication pairs; the other labelled
# cases are deselected.
SUBSET = "sgd-5_00000 or hvb-0091a706bc604188"
FAILED_INTENT = "FAIL — call_intent_match: kappa 0.57 < 0.6 on 3 pairs"
HOSTILE = "<script>alert(1)</script> @judges *gpt*"


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    report: dict[str, Any]
    markdown: str
    html: str


def _run(root: Path, *args: str) -> Run:
    out = root / "out"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "eval", "-q", "-p", "no:cacheprovider",
         "--callqa-embeddings=tfidf", "-k", SUBSET, f"--callqa-report={out}.json",
         f"--callqa-markdown={out}.md", f"--callqa-html={out}.html", *args],
        cwd=root, capture_output=True, text=True, timeout=300, check=False)
    assert Path(f"{out}.json").exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return Run(done.returncode, done.stdout, json.loads(Path(f"{out}.json").read_text("utf-8")),
               Path(f"{out}.md").read_text("utf-8"), Path(f"{out}.html").read_text("utf-8"))


def _copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("labelled")
    shutil.copytree(EXAMPLE_SET, root, dirs_exist_ok=True)
    return root


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run(_copy(tmp_path_factory), "--callqa-calibrate")


@pytest.fixture(scope="module")
def not_calibrated(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run(_copy(tmp_path_factory))


class Calibration(HTMLParser):
    """The page's calibration section: the verdict banner, the verdict lines under it, and
    the table's rows (cell texts, keyed by metric)."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.banner = ""
        self.lines: list[str] = []
        self.rows: dict[str, list[str]] = {}
        self._inside = False
        self._text: str | None = None
        self._where = ""
        self._cells: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        where = dict(attrs).get("id")
        if tag == "h2":
            self._inside = where == "calibration"
        elif self._inside and (where == "calibration-verdict" or tag in ("li", "td")):
            self._text, self._where = "", "banner" if where else tag
        elif self._inside and tag == "tr":
            self._cells = []

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if self._text is not None and tag in ("div", "li", "td"):
            if self._where == "banner":
                self.banner = self._text
            elif self._where == "li":
                self.lines.append(self._text)
            else:
                self._cells.append(self._text)
            self._text = None
        elif self._inside and tag == "tr" and self._cells:
            self.rows[self._cells[0]] = self._cells
        elif tag == "table":
            self._inside = False


def _markdown_row(text: str, metric: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| {metric} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_failed_calibration_is_in_the_markdown_summary(calibrated: Run) -> None:
    assert calibrated.returncode == 1, calibrated.stdout[-3000:]
    assert f"callqa calibration: {FAILED_INTENT}" in calibrated.stdout.splitlines()
    lines = calibrated.markdown.splitlines()
    assert any(line.startswith("**Judge calibration: ❌ fail** — judge heuristic")
               for line in lines), calibrated.markdown
    # "<" escaped: markdown shows it as written.
    assert "- " + FAILED_INTENT.replace("<", "\\<") in lines
    assert ("- INCOMPLETE — call_intent_match: 36 of 40 labels left out for labelled outputs "
            "not evaluated (36 whose tests were not selected): its agreement on them is "
            "unknown") in lines
    assert _markdown_row(calibrated.markdown, "call_intent_match") == [
        "call_intent_match", "text", "3", "37: 1 not scored, 36 not evaluated (of 40 labels)",
        "0.67", "0.57", "linear", "0.87", "+0.167"]
    # Before the scorecard: the comment may be cut at its end, never the verdict.
    assert calibrated.markdown.index("Judge calibration") < calibrated.markdown.index(
        "### Scorecard")


def test_a_failed_calibration_is_in_the_html_report(calibrated: Run) -> None:
    section = Calibration(calibrated.html)
    assert section.banner.startswith("Judge calibration: FAIL — judge heuristic")
    assert 'class="verdict v-fail" id="calibration-verdict"' in calibrated.html
    assert section.lines[0] == FAILED_INTENT
    assert section.rows["call_intent_match"][2:6] == [
        "3", "37: 1 not scored, 36 not evaluated (of 40 labels)", "0.67", "0.57"]
    assert section.rows["sentence_meaning_accuracy"][4:] == ["—", "—", "linear", "—", "—"]


def test_a_run_without_calibration_says_nothing_of_one(not_calibrated: Run) -> None:
    assert "calibration" not in not_calibrated.report
    for text in (not_calibrated.markdown, not_calibrated.html, not_calibrated.stdout):
        assert not re.search("calibr|kappa", text, re.IGNORECASE)


def test_an_incomplete_calibration_says_what_to_do(calibrated: Run) -> None:
    """Without the failing metric, what the deselected labels leave is an incomplete
    calibration: the files give its verdict and remedy, as the terminal would."""
    report = copy.deepcopy(calibrated.report)
    report["calibration"]["call_intent_match"]["kappa"] = 0.8
    report["run"]["calibration"].update(verdict="incomplete", problems=[])
    closing = ("incomplete — not a pass: labelled outputs not evaluated left labels out; run "
               "every labelled case, each with its labelled output")
    text = render_markdown(report)
    assert "**Judge calibration: ⚠️ incomplete**" in text
    assert f"- {closing}" in text.splitlines()
    assert "FAIL" not in text
    section = Calibration(render_html(report))
    assert section.banner.startswith("Judge calibration: INCOMPLETE — ")
    assert section.lines[-1] == closing
    assert section.rows["call_intent_match"][5] == "0.80"


def test_the_judges_name_shows_as_written(calibrated: Run) -> None:
    report = copy.deepcopy(calibrated.report)
    report["run"]["judge"]["description"] = HOSTILE
    verdict = next(line for line in render_markdown(report).splitlines()
                   if line.startswith("**Judge calibration"))
    assert "judge \\<script\\>alert(1)\\</script\\> @\u2060judges \\*gpt\\*" in verdict
    page = render_html(report)
    assert "<script>alert(1)" not in page
    assert Calibration(page).banner.startswith(f"Judge calibration: FAIL — judge {HOSTILE} ")
