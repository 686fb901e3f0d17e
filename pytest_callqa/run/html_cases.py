"""The case list of the HTML report and its drill-down: a summary line per case in the page,
and the rest (transcript excerpt, output against expected outcome, every metric with the
judge's reason) as JSON that :data:`SCRIPT` turns into elements the first time a case is
opened. Also the value formatting the whole page shares, and the check that a report has
the shape the page reads.

Safety of untrusted text: the summary lines go through :func:`html.escape`; the JSON sits in
a ``<script type="application/json">`` (never executed) with ``<``, ``>`` and ``&`` written
as ``\\u`` escapes, so nothing inside can close the element, and the script puts every
string into the page with ``textContent``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..engine.core.metrics import Bands, metric_figure, rated_edges
from ..engine.core.numbers import finite_number

NOT_SCORED = "—"
RATINGS = ("good", "acceptable", "fail", "blocker")
STATUS_ORDER = {"blocked": 0, "invalid": 1, "judge-error": 2, "unscored": 3, "scored": 4}


class HtmlReportError(ValueError):
    """The report given to the HTML renderer lacks what the page needs; the message names
    the key."""


def check_report(report: Mapping[str, Any], gate: Mapping[str, Any] | None) -> None:
    """Raise :class:`HtmlReportError` naming the key when ``report`` (or ``gate``) lacks the
    shape the page reads."""
    if not isinstance(report, Mapping):
        raise HtmlReportError(f"report: expected a JSON object, got {type(report).__name__}")
    if not str(report.get("schema", "")).startswith("callqa-report/"):
        raise HtmlReportError(f"report['schema']: expected 'callqa-report/1', got "
                              f"{report.get('schema')!r}")
    shapes = {"models": Mapping, "metric_specs": Mapping, "golden_cases": Mapping,
              "cases": list, "model_order": list}
    for key, kind in shapes.items():
        if not isinstance(report.get(key), kind):
            want = "an object" if kind is Mapping else "a list"
            raise HtmlReportError(f"report[{key!r}]: expected {want}, got "
                                  f"{type(report.get(key)).__name__}")
    for name, card in report["models"].items():
        if not isinstance(card, Mapping) or not isinstance(card.get("tasks"), Mapping):
            raise HtmlReportError(f"report['models'][{name!r}]['tasks']: expected an object")
    for i, case in enumerate(report["cases"]):
        if not isinstance(case, Mapping):
            raise HtmlReportError(f"report['cases'][{i}]: expected an object")
        for key in ("model", "case_id", "task"):
            if not isinstance(case.get(key), str):
                raise HtmlReportError(f"report['cases'][{i}][{key!r}]: expected a string")
        if not isinstance(case.get("metrics", {}), Mapping):
            raise HtmlReportError(f"report['cases'][{i}]['metrics']: expected an object")
    if gate is not None:
        if not isinstance(gate, Mapping):
            raise HtmlReportError(f"gate: expected an object, got {type(gate).__name__}")
        for i, entry in enumerate(gate.get("checks") or []):
            if not isinstance(entry, Mapping):
                raise HtmlReportError(f"gate['checks'][{i}]: expected an object")

# The drill-down and the case filter. Plain DOM calls; the JSON is parsed on the first open.
SCRIPT = """
(function(){
var data=null;
function load(){if(!data){data=JSON.parse(document.getElementById('callqa-data').textContent);}
return data;}
function el(tag,cls,text){var e=document.createElement(tag);if(cls){e.className=cls;}
if(text!==undefined&&text!==null){e.textContent=text;}return e;}
function show(v){return typeof v==='string'?v:JSON.stringify(v,null,2);}
function block(title,text){var d=el('div');d.appendChild(el('h4',null,title));
d.appendChild(el('pre',null,text));return d;}
function fill(box){var all=load();var c=all.cases[Number(box.dataset.i)];var g=all.golden[c.id];
var body=el('div','body');
if(g){var head='Transcript excerpt';if(g.t&&g.t>g.x.length){
head+=' (first '+g.x.length+' of '+g.t+' turns)';}body.appendChild(block(head,g.x.join('\\n')));}
var pair=el('div','pair');
pair.appendChild(block('Model output',c.out===null?'(no output)':show(c.out)));
pair.appendChild(block('Expected outcome',g?show(g.e):'(golden case not in the report)'));
body.appendChild(pair);
var t=el('table','metrics');var hr=el('tr');['Metric','Value','Rating','Reason and judge'].forEach(
function(h){hr.appendChild(el('th',null,h));});t.appendChild(hr);
c.m.forEach(function(m){var r=el('tr');r.appendChild(el('th',null,m[0]));
r.appendChild(el('td',m[2]?'r-'+m[2]:null,m[1]));
r.appendChild(el('td',null,(m[2]||'')+(m[4]?' ('+m[4]+')':'')));
var why=el('td');why.appendChild(el('div',null,m[3]));m[5].forEach(function(line){
why.appendChild(el('div','rs',line));});r.appendChild(why);t.appendChild(r);});
body.appendChild(t);
c.n.forEach(function(line){body.appendChild(el('p','rs',line));});
box.appendChild(body);box.dataset.filled='1';}
document.addEventListener('toggle',function(ev){var box=ev.target;
if(box.classList&&box.classList.contains('case')&&box.open&&!box.dataset.filled){fill(box);}},true);
var f=document.getElementById('filter');
if(f){f.addEventListener('input',function(){
var m=f.querySelector('[name=model]').value,t=f.querySelector('[name=task]').value,
s=f.querySelector('[name=status]').value,q=f.querySelector('[name=q]').value.toLowerCase();
var list=document.querySelectorAll('details.case'),n=0;
for(var i=0;i<list.length;i++){var d=list[i];var ok=(!m||d.dataset.m===m)&&(!t||d.dataset.t===t)
&&(!s||d.dataset.s===s)&&(!q||d.dataset.c.indexOf(q)>=0);d.hidden=!ok;if(ok){n++;}}
document.getElementById('shown').textContent=String(n);});}
})();
"""


def unit(spec: Any) -> str:
    """How a metric's values are written: ``rate`` (in percent) for a definition shown in
    percent — a rate, or a 0-1 metric such as the hallucination rate that reads as one, as the
    terminal's scorecard shows it — else its scale."""
    if isinstance(spec, Mapping):
        return "rate" if spec.get("percent") else str(spec.get("scale", ""))
    if spec is None:
        return ""
    return "rate" if getattr(spec, "percent", False) else str(getattr(spec, "scale", ""))


def edges(spec: Any) -> tuple[float, ...]:
    """The edges of a metric's bands, from its definition or as the report records it."""
    if isinstance(spec, Mapping):
        bands = spec.get("bands")
        if not isinstance(bands, Mapping):
            return ()
        return tuple(float(bands[key]) for key in ("good", "acceptable", "blocker")
                     if finite_number(bands.get(key)))
    bands = getattr(spec, "bands", None)
    return bands.edges if isinstance(bands, Bands) else ()


def fmt(value: Any, scale: str = "", edges: Sequence[float] = ()) -> str:
    """A metric value as the scorecard writes it: rates in percent, counts without
    decimals, the rest with three, and more beside one of ``edges``, the band edges that
    rated it (:func:`metric_figure`); ``—`` when not scored."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return NOT_SCORED
    return metric_figure(value, scale, edges)


def esc(value: Any) -> str:
    return escape(str(value), quote=True)


def rating_of(value: Any) -> str | None:
    return value if value in RATINGS else None


def cases_section(report: Mapping[str, Any], models: Sequence[str], tasks: Sequence[str],
                  specs: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """The case list: one collapsed ``<details>`` per case entry of ``report``, worst first,
    with a filter by model, task, status and case id, and the data its drill-down reads."""
    index = {m: i for i, m in enumerate(models)}
    entries = sorted(enumerate(report["cases"]), key=lambda item: (
        STATUS_ORDER[_status(item[1])],
        item[1].get("score") if isinstance(item[1].get("score"), (int, float)) else 2.0,
        item[1]["task"], item[1]["case_id"], index.get(item[1]["model"], len(index)),
        item[0]))
    summaries, payload = [], []
    for i, (_, case) in enumerate(entries):
        status = _status(case)
        score = case.get("score")
        blockers = case.get("blockers") or []
        run = case.get("run")
        summaries.append(
            f'<details class="case" data-i="{i}" data-m="{index.get(case["model"], "")}" '
            f'data-t="{esc(case["task"])}" data-s="{status}" '
            f'data-c="{esc(case["case_id"].lower())}"><summary>'
            f'<span class="s s-{status}">{status.replace("-", " ")}</span> '
            f'{esc(case["model"])} · {esc(case["task"])} · <code>{esc(case["case_id"])}</code>'
            + (f" · run {esc(run)}" if isinstance(run, int) and run > 0 else "")
            + _runs_text(case)
            + f" · score {fmt(score)}"
            + (f" · blockers: {esc(', '.join(map(str, blockers)))}" if blockers else "")
            + "</summary></details>")
        payload.append(_case_data(case, specs))
    golden = {}
    for cid, g in report["golden_cases"].items():
        if isinstance(g, Mapping):
            golden[cid] = {"x": [str(t) for t in g.get("transcript_excerpt") or []],
                           "t": g.get("turns"), "e": g.get("expected_outcome")}
    try:
        data = json.dumps({"cases": payload, "golden": golden}, ensure_ascii=False,
                          separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise HtmlReportError(f"report['cases'] or report['golden_cases']: not plain "
                              f"JSON data ({exc})") from None
    # Written so that no text inside can close the script element or start markup.
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    filters = "".join(f'<option value="{i}">{esc(m)}</option>' for m, i in index.items())
    task_options = "".join(f'<option value="{esc(t)}">{esc(t)}</option>' for t in tasks)
    statuses = "".join(f'<option value="{s}">{s.replace("-", " ")}</option>'
                       for s in STATUS_ORDER)
    return "\n".join([
        f'<h2 id="cases">Cases ({len(entries)})</h2>',
        "<p class=\"meta\">Worst first: blocked, invalid, judge errors, then by task score. "
        "Open a case for its transcript excerpt, output, expected outcome and every "
        "metric with the judge's reason.</p>",
        "<noscript><p>Opening a case needs JavaScript; the list and the scorecard do "
        "not.</p></noscript>",
        f'<div id="filter"><select name="model"><option value="">all models</option>'
        f'{filters}</select><select name="task"><option value="">all tasks</option>'
        f'{task_options}</select><select name="status"><option value="">any status</option>'
        f'{statuses}</select><input name="q" type="search" placeholder="case id">'
        f'showing <span id="shown">{len(entries)}</span></div>',
        '<div id="case-list">', *summaries, "</div>",
        f'<script type="application/json" id="callqa-data">{data}</script>',
    ])


def _case_data(case: Mapping[str, Any],
               specs: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One case's drill-down: metric rows ``[name, value, rating, reason, flags, judge
    lines]`` in the task's spec order, and the notes and judge errors."""
    task_specs = specs.get(case["task"], {})
    metrics: Mapping[str, Any] = case.get("metrics") or {}
    records: dict[str, list[Mapping[str, Any]]] = {}
    for rec in case.get("judge_records") or []:
        if isinstance(rec, Mapping):
            records.setdefault(str(rec.get("metric")), []).append(rec)
    order = [mid for mid in task_specs if mid in metrics] + [
        m for m in metrics if m not in task_specs]
    rows = []
    for mid in order:
        m = metrics[mid] if isinstance(metrics[mid], Mapping) else {}
        spec = task_specs.get(mid, {})
        flags = [f for f, on in (("not scored", m.get("scored") is False),
                                 ("off-scale reply", m.get("flagged")),
                                 ("judge error", m.get("judge_error"))) if on]
        if isinstance(m.get("mean"), (int, float)):
            spread = (f" ± {fmt(m['sd'], unit(spec))}" if isinstance(m.get("sd"), (int, float))
                      else "")
            runs = m.get("scored_runs")
            flags.append(f"over runs {fmt(m['mean'], unit(spec))}{spread}"
                         + (" (one run scored it: no spread)" if runs == 1 else ""))
        rating = "blocker" if m.get("blocker") else rating_of(m.get("rating"))
        details = m.get("details")
        rows.append([spec.get("name", mid),
                     fmt(m.get("value"), unit(spec), rated_edges(
                         details if isinstance(details, Mapping) else {}, edges(spec))),
                     rating, m.get("reason") or "", ", ".join(flags),
                     _judge_lines(records.pop(mid, []), m.get("reason"))])
    notes = [str(n) for n in case.get("notes") or []]
    notes += [f"judge error: {e}" for e in case.get("judge_errors") or []]
    notes += [f"judge record for {mid}: " + " | ".join(_judge_lines(recs, None))
              for mid, recs in records.items()]
    return {"id": case["case_id"], "out": case.get("output"), "m": rows, "n": notes}


def _judge_lines(records: list[Mapping[str, Any]], reason: Any) -> list[str]:
    """What a metric's judge records add to its reason: who judged, the score given, the
    expected and observed excerpts the judge quoted, and a reason of its own."""
    lines = []
    for rec in records:
        head = f"judge {rec.get('judge', '?')}: score {fmt(rec.get('score'))}"
        if rec.get("judge_error"):
            head += " (judge error)"
        if isinstance(rec.get("repeats"), list):
            head += (" (median of " + ", ".join(fmt(s) for s in rec["repeats"]) + ")"
                     + (" — repeats disagree" if rec.get("repeats_disagree") else ""))
        lines.append(head)
        for key, label in (("expected_outcome_reference", "expected"),
                           ("model_output_observed", "observed")):
            if rec.get(key):
                lines.append(f"{label}: {rec[key]}")
        if rec.get("reason") and rec.get("reason") != reason:
            lines.append(f"reason: {rec['reason']}")
    return lines


def _runs_text(case: Mapping[str, Any]) -> str:
    """A case run more than once: how many runs, how many passed, flaky or not."""
    runs = case.get("runs")
    if not isinstance(runs, int):
        return ""
    rate = case.get("pass_rate")
    text = f" · {runs} runs" + (f", pass rate {fmt(rate)}" if isinstance(rate, float | int)
                                else "")
    return text + (" · <b>flaky</b>" if case.get("flaky") else "")


def _status(case: Mapping[str, Any]) -> str:
    if case.get("blocked"):
        return "blocked"
    if case.get("valid") is False:
        return "invalid"
    if case.get("judge_errors"):
        return "judge-error"
    if not isinstance(case.get("score"), (int, float)):
        return "unscored"
    return "scored"
