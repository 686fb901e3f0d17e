"""The HTML report: its structure read from the markup, and the page in a real browser —
headless Chromium driven over its DevTools protocol on a local port: no console error, no
network request, the scorecard's rows and columns in the DOM, a case opened, a screenshot."""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.request import ProxyHandler, build_opener

import pytest
import websocket

from pytest_callqa.engine.registry import default_registry
from pytest_callqa.engine.report import cost_text
from pytest_callqa.run.html import HtmlReportError, fmt, render_html, scale_top

MODELS = ["gamma", "alpha", "beta"]  # the configured order, not alphabetical
TASKS = ("qa", "agent")
HOSTILE = ("</script><script>window.__pwned = 1; console.error('pwned')</script>"
           "<img src=x onerror=\"window.__pwned = 2\">")
BROWSER_TIMEOUT_S = 20.0


def make_report(cases_per_task: int = 2) -> dict[str, Any]:
    """A small report of the JSON shape a run writes, with real metric definitions: beta
    fires the QA compliance blocker on the first QA case, every other metric is good."""
    registry = default_registry()
    specs = {t: [s.describe() for s in registry.metrics_for(t)] for t in TASKS}
    golden, cases = {}, []
    models: dict[str, Any] = {}
    for task in TASKS:
        for n in range(cases_per_task):
            golden[f"{task}-{n}"] = {
                "task": task, "turns": 20, "expected_outcome": {"answer": f"truth {n}"},
                "transcript_excerpt": [f"turn {i}: customer: line {i}" for i in range(12)]}
    for model in MODELS:
        tasks = {}
        for task in TASKS:
            aggregate: dict[str, Any] = {}
            for n in range(cases_per_task):
                blocked = model == "beta" and task == "qa" and n == 0
                metrics = {}
                for spec in specs[task]:
                    bands = spec["bands"] or {}
                    value = bands.get("good", 1.0) if bands else 0.5
                    blocker = blocked and spec["id"] == "compliance_false_pass_rate"
                    if blocker:
                        value = 0.5
                    metrics[spec["id"]] = {
                        "value": value, "scored": True, "rating": (
                            "blocker" if blocker else "good" if bands else None),
                        "reason": f"reason for {spec['id']} of {model}", "blocker": blocker,
                        "flagged": False, "judge_error": False, "details": {}}
                    if n == 0:
                        aggregate[spec["id"]] = {key: metrics[spec["id"]][key]
                                                 for key in ("value", "rating", "blocker")}
                cases.append({
                    "task": task, "case_id": f"{task}-{n}", "model": model, "run": 0,
                    "score": 0.0 if blocked else 0.9, "valid": True, "blocked": blocked,
                    "blockers": ["compliance_false_pass_rate"] if blocked else [],
                    "metrics": metrics, "not_scored": [], "renormalised": False,
                    "judge_records": [{"metric": specs[task][0]["id"], "judge": "heuristic",
                                       "score": 1.0, "reason": "judge's own reason",
                                       "expected_outcome_reference": "truth",
                                       "model_output_observed": "answer", "flagged": False}],
                    "usage": {}, "notes": [], "judge_errors": [],
                    "output": {"answer": f"answer of {model}"}})
            tasks[task] = {"score": 0.9, "cases": cases_per_task, "invalid_cases": 0,
                           "judge_error_cases": 0, "blocked_cases": int(model == "beta"),
                           "disqualified": False, "not_scored": [], "metrics": aggregate}
        models[model] = {"tasks": tasks, "benchmarks": {}, "benchmark_score": None,
                         "final_score_a": 0.9, "final_score_b": 0.9,
                         "cost_per_1000_calls": 1.5, "cost_adjusted_rank": 1,
                         "any_blocker": model == "beta", "missing_tasks": [], "usage": {}}
    return {"schema": "callqa-report/1", "run": {"judge": {"name": "heuristic"},
                                                 "started_at": "2026-01-01T00:00:00+00:00",
                                                 "duration_s": 1.0, "rank_basis": "final"},
            "models": models, "model_order": list(MODELS), "metric_specs": specs,
            "golden_cases": golden, "cases": cases, "not_evaluated": [], "notes": [],
            "judge_errors": {"verdicts": 0, "outputs_without_task_score": 0}}


def shown_metrics(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(task, spec["id"]) for task, specs in report["metric_specs"].items()
            for spec in specs if spec.get("shown", True)]


class Markup(HTMLParser):
    """The parts of the page the tests read: scorecard rows and their cells, model headers,
    every src/href value, the case summaries in order and the JSON data."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []
        self.models: list[str] = []
        self.links: list[str] = []
        self.cases: list[dict[str, str]] = []
        self.data = ""
        self.csp = ""
        self._in: str | None = None
        self._row: dict[str, Any] | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.links += [v for k, v in a.items() if k in ("src", "href")]
        if tag == "tr":
            self._row = None
            if a.get("class") == "metric":
                self._row = {"task": a["data-task"], "metric": a["data-metric"], "cells": []}
                self.rows.append(self._row)
        elif tag == "td" and "cell" in a.get("class", "").split() and self._row is not None:
            self._row["cells"].append("")
            self._in = "cell"
        elif tag == "meta" and a.get("http-equiv") == "Content-Security-Policy":
            self.csp = a["content"]
        elif tag == "th" and a.get("class") == "model":
            self.models.append("")
            self._in = "model"
        elif tag == "details":
            self.cases.append(a)
        elif tag == "script" and a.get("type") == "application/json":
            self._in = "data"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th", "script"):
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "cell" and self._row is not None:
            self._row["cells"][-1] += data
        elif self._in == "model":
            self.models[-1] += data
        elif self._in == "data":
            self.data += data


def test_one_scorecard_row_per_shown_metric_and_one_column_per_model() -> None:
    report = make_report()
    report["metric_specs"]["agent"][1]["shown"] = False
    page = Markup(render_html(report))
    assert page.models == MODELS
    assert [(r["task"], r["metric"]) for r in page.rows] == shown_metrics(report)
    assert ("agent", report["metric_specs"]["agent"][1]["id"]) not in [
        (r["task"], r["metric"]) for r in page.rows]
    assert all(len(r["cells"]) == len(MODELS) for r in page.rows)


def test_blocker_cell_is_rated_and_listed_before_the_scorecard() -> None:
    html = render_html(make_report())
    row = next(r for r in Markup(html).rows if r["metric"] == "compliance_false_pass_rate")
    assert row["cells"][MODELS.index("beta")] == "50.0% !!"
    assert row["cells"][MODELS.index("alpha")] == "1.0%"
    assert 'class="cell r-blocker"' in html
    assert html.index('id="blockers"') < html.index('id="scorecard"')
    panel = html[html.index('id="blockers"'):html.index('id="scorecard"')]
    assert "beta" in panel and "Compliance False Pass Rate" in panel and "alpha" not in panel


def blocker_cells(html: str) -> list[str]:
    row = html[html.index("<th>Any Blocker Triggered?</th>"):]
    row = row[:row.index("</tr>")]
    return [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td class=\"cell[^>]*>.*?</td>",
                                                              row)]


def test_a_blocker_within_the_tolerance_reads_yes_not_no() -> None:
    # beta's QA case is blocked but the task not disqualified (a tolerance of 1): the page
    # listed "Blockers fired: beta: ..." above "Any Blocker Triggered? No" when the report's
    # any_blocker was the disqualification.
    report = make_report()
    report["models"]["beta"]["tasks"]["agent"]["blocked_cases"] = 0
    html = render_html(report)
    assert blocker_cells(html) == ["No", "No", "Yes (within tolerance) ~"]
    panel = html[html.index('id="blockers"'):html.index('id="scorecard"')]
    assert ("qa: 1 of 2 cases blocked, within the disqualify tolerance: not disqualified"
            in panel)
    report["models"]["beta"]["tasks"]["qa"]["disqualified"] = True
    assert blocker_cells(render_html(report))[2] == "Yes !!"
    report["models"]["beta"]["tasks"]["qa"].update(disqualified=False,
                                                   disqualification_unknown=True)
    assert blocker_cells(render_html(report))[2] == "Yes (disqualification unknown) !?"


def test_a_figure_by_a_band_edge_keeps_the_digits_that_tell_it_from_the_edge() -> None:
    # Rounded to one decimal, beta's 1/33 read "3.0% !!" beside gamma's 3/100 "3.0% ~", and
    # alpha's 1/99 "1.0% ~" under "<= 1%", in the table, the blockers, the chart and the case.
    report = make_report()
    rates = {"gamma": (0.03, "acceptable"), "alpha": (1 / 99, "acceptable"),
             "beta": (1 / 33, "blocker")}
    for model, (value, rating) in rates.items():
        aggregate = report["models"][model]["tasks"]["qa"]["metrics"]
        case = next(c for c in report["cases"] if (c["model"], c["case_id"]) == (model, "qa-0"))
        for metric in (aggregate["compliance_false_pass_rate"],
                       case["metrics"]["compliance_false_pass_rate"]):
            metric.update(value=value, rating=rating, blocker=rating == "blocker")
    html = render_html(report)
    page = Markup(html)
    row = next(r for r in page.rows if r["metric"] == "compliance_false_pass_rate")
    assert row["cells"] == ["3.0% ~", "1.01% ~", "3.03% !!"]
    assert "Compliance False Pass Rate = 3.03% (threshold" in html
    assert ">3.03%</text>" in html and ">1.01%</text>" in html
    cases = json.loads(page.data)["cases"]
    assert sorted(row[1] for c in cases if c["id"] == "qa-0" for row in c["m"]
                  if row[0] == "Compliance False Pass Rate") == ["1.01%", "3.0%", "3.03%"]


def test_a_case_figure_keeps_its_side_of_the_bar_that_rated_it() -> None:
    # A case's row chose its digits by the definition's bands: 0.9497 under a policy's (or
    # the case's own) bar of 0.95 read "0.950" beside a fail.
    report = make_report()
    [metric] = [c["metrics"]["evidence_backed_reasoning"] for c in report["cases"]
                if (c["model"], c["case_id"]) == ("alpha", "qa-0")]

    def shown() -> list[str]:
        cases = json.loads(Markup(render_html(report)).data)["cases"]
        return sorted(row[1] for c in cases if c["id"] == "qa-0" for row in c["m"]
                      if row[0] == "Evidence-Backed Reasoning" and "alpha" in row[3])

    metric.update(value=0.9497, rating="fail", reason="alpha's",
                  details={"band_edges": [0.95]})
    assert shown() == ["0.9497"]
    # A report whose details are not a table shows the figure as before, not a crash.
    metric["details"] = ["band_edges"]
    assert shown() == ["0.950"]


def test_model_output_and_names_are_escaped() -> None:
    report = make_report()
    report["cases"][0]["output"] = HOSTILE
    report["cases"][0]["metrics"]["question_score_accuracy"]["reason"] = HOSTILE
    report["models"]["<b>gamma&co</b>"] = report["models"].pop("gamma")
    report["model_order"][0] = "<b>gamma&co</b>"
    for case in report["cases"]:
        if case["model"] == "gamma":
            case["model"] = "<b>gamma&co</b>"
    html = render_html(report)
    assert "<script>window" not in html and "<img" not in html and "<b>gamma" not in html
    assert html.count("<script") == 2  # the page's own script and its JSON data
    assert "&lt;b&gt;gamma&amp;co&lt;/b&gt;" in html
    page = Markup(html)
    data = json.loads(page.data)
    case = data["cases"][next(i for i, c in enumerate(page.cases)
                              if c["data-c"] == report["cases"][0]["case_id"]
                              and c["data-m"] == "0")]
    assert case["out"] == HOSTILE
    assert case["m"][0][3] == HOSTILE


def test_no_resource_is_fetched_from_anywhere() -> None:
    html = render_html(make_report(), {"verdict": "pass", "checks": []})
    links = Markup(html).links
    assert links and all(link.startswith("#") for link in links)
    assert "http://" not in html and "https://" not in html
    assert "url(" not in html and "@import" not in html
    assert Markup(html).csp.startswith("default-src 'none'; style-src 'sha256-")


def test_gate_verdict_regressions_and_deltas() -> None:
    check = {"model": "alpha", "task": "qa", "metric": "question_score_accuracy", "old": 0.97,
             "new": 0.95, "delta": -0.02, "interval": [-0.04, -0.01], "status": "regression"}
    regression = {**check, "kind": "metric", "shared_cases": 12, "status": None,
                  "moved_cases": [{"case_id": "qa-1", "old": 1.0, "new": 0.5}]}
    gate = {"baseline": "main.json", "mode": "fail", "verdict": "fail",
            "checks": [check, {**check, "model": "beta", "delta": 0.0, "status": "unchanged"},
                       {**check, "model": "gamma", "status": "too few cases"}],
            "regressions": [regression],
            "removed_cases": [{"model": "alpha", "task": "qa", "case_id": "qa-9"}],
            "warnings": ["baseline from another prompt version"]}
    html = render_html(make_report(), gate)
    row = next(r for r in Markup(html).rows if r["metric"] == "question_score_accuracy")
    assert row["cells"] == ["0.950Δ -0.020 too few cases", "0.950Δ -0.020 regression",
                            "0.950Δ +0.000"]
    assert 'class="d d-too-few-cases"' in html and 'class="d d-regression"' in html
    assert "Baseline gate: FAIL" in html
    assert ("<td>metric</td><td>alpha</td><td>qa</td><td>question_score_accuracy</td>"
            "<td>0.970 → 0.950</td><td>-0.020</td><td>[-0.040, -0.010]</td><td>12</td>"
            "<td>qa-1 1.000 → 0.500</td>") in html
    assert "<li>alpha · qa · qa-9</li>" in html
    assert "<li>baseline from another prompt version</li>" in html


def test_the_gates_own_result_is_shown() -> None:
    # The gate is built in parallel with this page; only this test depends on its module.
    from pytest_callqa.run.gate import compare_reports

    baseline = make_report(cases_per_task=6)
    current = copy.deepcopy(baseline)
    for case in current["cases"]:
        if case["model"] == "alpha" and case["task"] == "qa":
            case["metrics"]["question_score_accuracy"]["value"] = 0.5
    current["models"]["alpha"]["tasks"]["qa"]["metrics"]["question_score_accuracy"][
        "value"] = 0.5
    gate = {"baseline": "main.json", "mode": "fail", **compare_reports(current, baseline)}
    html = render_html(current, gate)
    row = next(r for r in Markup(html).rows if r["metric"] == "question_score_accuracy")
    assert row["cells"][MODELS.index("alpha")] == "0.500Δ -0.450 regression"
    assert "Baseline gate: FAIL" in html
    assert ("<td>metric</td><td>alpha</td><td>qa</td><td>question_score_accuracy</td>"
            "<td>0.950 → 0.500</td><td>-0.450</td>") in html


def test_a_pass_that_compared_nothing_says_so_in_the_banner() -> None:
    """The terminal and the markdown said "no regression found, but no comparison could be
    made"; the HTML banner said only "PASS"."""
    report = make_report()
    few = {"model": "alpha", "task": "qa", "metric": "score", "status": "too few cases"}
    gate = {"verdict": "pass", "mode": "fail", "baseline": "b.json", "checks": [few]}
    assert ("Baseline gate: PASS — baseline b.json, mode fail — no regression found, but no "
            "comparison could be made</div>") in render_html(report, gate)
    compared = {**gate, "checks": [few, {**few, "metric": "x", "status": "unchanged"}]}
    assert "Baseline gate: PASS — baseline b.json, mode fail</div>" in render_html(
        report, compared)


def test_a_gate_that_could_not_be_run_says_why_in_the_banner() -> None:
    report = make_report()
    report["gate"] = {"baseline": "b.json", "mode": "fail", "verdict": "not run",
                      "problem": "baseline report b.json does not exist"}
    assert ('id="gate">Baseline gate not run: baseline report b.json does not exist — '
            "baseline b.json, mode fail</div>") in render_html(report)


def test_the_reports_own_gate_is_shown_without_one_given() -> None:
    report = make_report()
    report["gate"] = {"verdict": "pass", "mode": "report", "baseline": "b.json"}
    assert "Baseline gate: PASS" in render_html(report)
    assert "Baseline gate" not in render_html(make_report())


def test_cases_come_worst_first_with_their_drill_down_data() -> None:
    report = make_report()
    page = Markup(render_html(report))
    assert len(page.cases) == len(report["cases"])
    assert page.cases[0]["data-s"] == "blocked"
    assert page.cases[0]["data-m"] == str(MODELS.index("beta"))
    data = json.loads(page.data)
    first = data["cases"][int(page.cases[0]["data-i"])]
    assert first["id"] == "qa-0"
    assert [m[0] for m in first["m"]] == [s["name"] for s in report["metric_specs"]["qa"]]
    assert "judge heuristic: score 1.000" in first["m"][0][5]
    assert "reason: judge's own reason" in first["m"][0][5]
    assert data["golden"]["qa-0"]["e"] == {"answer": "truth 0"}


@pytest.mark.parametrize(("edit", "key"), [
    (lambda r: r.pop("cases"), "report['cases']"),
    (lambda r: r.update(schema="other/1"), "report['schema']"),
    (lambda r: r["cases"][1].pop("model"), "report['cases'][1]['model']"),
    (lambda r: r["models"]["alpha"].pop("tasks"), "report['models']['alpha']['tasks']"),
    (lambda r: r["cases"][0].update(output=float("nan")), "report['cases']"),
])
def test_bad_report_names_the_key(edit: Any, key: str) -> None:
    report = make_report()
    edit(report)
    with pytest.raises(HtmlReportError, match=re.escape(key)):
        render_html(report)


def test_bad_gate_names_the_key() -> None:
    with pytest.raises(HtmlReportError, match=re.escape("gate['checks'][0]")):
        render_html(make_report(), {"checks": ["alpha"]})


def test_values_and_chart_scales() -> None:
    assert fmt(None) == "—" and fmt(True) == "—"
    assert fmt(0.0123, "rate") == "1.2%"
    assert fmt(2.0, "count") == "2" and fmt(1.25, "count") == "1.25"
    assert fmt(0.91234, "0-1") == "0.912"
    assert scale_top("1-5 → 0-1", [0.5], None) == 1.0
    assert scale_top("0-100", [35.0], None) == 100.0
    assert scale_top("rate", [0.2], None) == 1.0
    bands = {"good": 0, "acceptable": 2, "blocker": 2, "higher_is_better": False}
    assert scale_top("count", [3.0], bands) == 3.0
    assert scale_top("count", [0.0], bands) == 2.0


# -- the page in a real browser ----------------------------------------------------------


class Chromium:
    """Headless Chromium with its DevTools protocol on a local port, stopped on exit.

    Every call waits at most ``BROWSER_TIMEOUT_S``; console messages, exceptions, log
    entries and network requests are kept as they arrive.
    """

    def __init__(self, binary: str, profile: Path) -> None:
        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-extensions",
             "--window-size=1280,900", f"--user-data-dir={profile}",
             "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.events: list[dict[str, Any]] = []
        self._id = 0
        try:
            port = self._port(profile / "DevToolsActivePort")
            # The DevTools endpoint is local: no proxy from the environment may stand between.
            opener = build_opener(ProxyHandler({}))
            with opener.open(f"http://127.0.0.1:{port}/json/list", timeout=5) as reply:
                targets = json.loads(reply.read())
            page = next(t for t in targets if t["type"] == "page")
            self.ws = websocket.create_connection(
                page["webSocketDebuggerUrl"], timeout=BROWSER_TIMEOUT_S, suppress_origin=True)
        except BaseException:
            self._stop()
            raise

    def _port(self, path: Path) -> int:
        deadline = time.monotonic() + BROWSER_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited at start with code {self.proc.returncode}")
            if path.exists() and path.read_text().strip():
                return int(path.read_text().split()[0])
            time.sleep(0.05)
        raise TimeoutError(f"chromium did not open its DevTools port in {BROWSER_TIMEOUT_S} s")

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop()

    def _stop(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.proc.poll() is None:
            # Only the group this test started (the browser and its helpers).
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self._id:
                assert "error" not in message, f"{method}: {message['error']}"
                result: dict[str, Any] = message["result"]
                return result
            self.events.append(message)

    def wait_for(self, event: str) -> None:
        deadline = time.monotonic() + BROWSER_TIMEOUT_S
        while not any(e.get("method") == event for e in self.events):
            assert time.monotonic() < deadline, f"no {event} in {BROWSER_TIMEOUT_S} s"
            self.events.append(json.loads(self.ws.recv()))

    def js(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                          awaitPromise=True)
        assert "exceptionDetails" not in reply, reply["exceptionDetails"]
        return reply["result"].get("value")

    def errors(self) -> list[str]:
        found = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(f"console.{params['type']}: {params['args']}")
            elif method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"log: {params['entry']['text']}")
        return found

    def requests(self, page_url: str) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"
                and e["params"]["request"]["url"] != page_url]


@pytest.fixture
def chromium() -> str:
    binary = shutil.which("chromium")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (Debian: apt-get install chromium); CI runs "
                    "this test")
    return binary


def test_page_renders_in_headless_chromium(chromium: str, tmp_path: Path) -> None:
    report = make_report(cases_per_task=3)
    report["cases"][0]["output"] = HOSTILE
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    url = page.as_uri()
    with Chromium(chromium, tmp_path / "profile") as browser:
        for domain in ("Runtime", "Log", "Network", "Page"):
            browser.call(f"{domain}.enable")
        browser.call("Page.navigate", url=url)
        browser.wait_for("Page.loadEventFired")

        rows = browser.js("""Array.from(document.querySelectorAll('#scorecard-table tr.metric'))
            .map(r => [r.dataset.task, r.dataset.metric, r.querySelectorAll('td.cell').length])""")
        assert [(t, m) for t, m, _ in rows] == shown_metrics(report)
        assert {n for _, _, n in rows} == {len(MODELS)}
        assert browser.js("Array.from(document.querySelectorAll('th.model'))"
                          ".map(th => th.textContent)") == MODELS
        assert browser.js("document.querySelectorAll('details.case').length") == len(
            report["cases"])
        # Lean pages: a case adds a handful of elements until it is opened.
        assert browser.js("document.getElementsByTagName('*').length") < 1500 + 8 * len(
            report["cases"])

        hostile = next(i for i, c in enumerate(Markup(page.read_text()).cases)
                       if c["data-c"] == report["cases"][0]["case_id"] and c["data-m"] == "0")
        opened = browser.js(f"""new Promise(done => {{
            const box = document.querySelectorAll('details.case')[{hostile}];
            box.open = true;
            setTimeout(() => done([box.querySelectorAll('.body table.metrics tr').length,
                box.querySelector('.pair pre').textContent]), 300);
        }})""")
        assert opened == [len(report["metric_specs"]["qa"]) + 1, HOSTILE]
        assert browser.js("window.__pwned === undefined") is True

        shown = browser.js("""(() => { const f = document.getElementById('filter');
            f.querySelector('[name=model]').value = '2';
            f.dispatchEvent(new Event('input'));
            return document.getElementById('shown').textContent; })()""")
        assert shown == str(sum(1 for c in report["cases"] if c["model"] == MODELS[2]))

        shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
        (tmp_path / "report.png").write_bytes(shot)
        assert browser.errors() == []
        assert browser.requests(url) == []
    assert browser.proc.poll() is not None
    png = (tmp_path / "report.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000


def test_browser_check_sees_errors_and_requests(chromium: str, tmp_path: Path) -> None:
    """The browser test would notice a broken page: a console error, a resource fetched."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><img src=\"missing.png\">"
                    "<script>console.error('seen')</script></body></html>", encoding="utf-8")
    with Chromium(chromium, tmp_path / "profile") as browser:
        for domain in ("Runtime", "Log", "Network", "Page"):
            browser.call(f"{domain}.enable")
        browser.call("Page.navigate", url=page.as_uri())
        browser.wait_for("Page.loadEventFired")
        browser.js("new Promise(done => setTimeout(done, 200))")
    assert any("seen" in e for e in browser.errors())
    assert browser.requests(page.as_uri()) == [(tmp_path / "missing.png").as_uri()]


def test_copy_of_report_is_left_unchanged() -> None:
    report = make_report()
    before = copy.deepcopy(report)
    render_html(report, {"verdict": "pass", "checks": []})
    assert report == before


def test_the_rank_row_says_what_the_rank_was_made_by() -> None:
    # Before: "by cost efficiency" whatever the scorecard ranked by; with a model whose cost
    # is unknown it ranks by the final score alone.
    report = make_report()
    assert "by cost efficiency (final)" in render_html(report)
    report["models"]["beta"]["cost_per_1000_calls"] = None
    assert "by final score alone, a cost being unknown (final)" in render_html(report)
    # With no model ranked, the terminal's words: the HTML said a cost was unknown when
    # every cost was known and every final score unknown.
    for card in report["models"].values():
        card["cost_per_1000_calls"], card["cost_adjusted_rank"] = 1.5, None
    assert "no model ranked, what each would be ranked on (final) being unknown" in \
        render_html(report)


def test_a_real_reports_rank_row_says_it_weighed_cost(report: dict[str, Any]) -> None:
    # Every model of the example has a cost, and the terminal ranks "by cost efficiency";
    # the HTML said "by final score alone, a cost being unknown": the report held no
    # cost_efficiency, which the row reads. (budget-7b, without an output for one case,
    # has no final score to weigh, so it is not ranked.)
    assert all(isinstance(card["cost_per_1000_calls"], float)
               for card in report["models"].values())
    assert all(isinstance(card["cost_efficiency"], float)
               for card in report["models"].values() if card["cost_adjusted_rank"])
    assert report["models"]["budget-7b"]["cost_adjusted_rank"] is None
    assert "by cost efficiency (" in render_html(report)


def test_a_cost_below_a_cent_is_not_shown_as_free(report: dict[str, Any]) -> None:
    # "$0.00" beside a rank that weighed the cost read as free; the markdown said $0.0040.
    model = report["model_order"][0]
    report["models"][model]["cost_per_1000_calls"] = 0.004
    assert "$0.0040" in render_html(report)
    assert (cost_text(0.004), cost_text(0.0), cost_text(4.83), cost_text(0.05)) == (
        "$0.0040", "$0.00", "$4.83", "$0.05")
