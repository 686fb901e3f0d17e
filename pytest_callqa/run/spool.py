"""What a test attaches to its report, as it crosses to the controller (xdist ships every
report through execnet), and the temporary file the controller keeps it in until the end
of the run, where the scorecard and the JSON report read it back."""

from __future__ import annotations

import json
import tempfile
from typing import IO, TYPE_CHECKING, Any

from ..engine.core.unicode_text import replace_lone_surrogates
from ..engine.core.urls import knows_secrets, redact_known

if TYPE_CHECKING:
    from ..engine.core.cases import GoldenCase

# How much of each transcript the report carries for a reader (the HTML drill-down).
EXCERPT_TURNS = 12
EXCERPT_CHARS = 300
# The details of a metric the scorecard reads — a pooled rate's counts; whether its missing
# value may hide a blocker; a custom metric's raised code or unusable return (the
# calibration counts both code errors), and whether the case's own bar rated it (the
# calibration leaves such labels out) — the rest stay in the report.
SCORECARD_DETAILS = ("numerator", "denominator", "lower_bound", "bound_limit",
                     "blocker_metric", "raised", "returned", "case_bar")
# The keys of a packed payload (see packed) that hold its case entry and its later runs'
# results as JSON text...
ENTRY = "entry"
RUNS = "later_runs"
# ... and what the scorecard reads of each run's result (see scorecard_view).
VIEWS = "scorecard_views"
# The key of a payload that holds the test's golden case as the report shows it
# (golden_entry): its id, the entry (once packed, as JSON text) and its place in the
# catalogue's order (Catalog.position).
GOLDEN = "golden_case"
# Bytes the spool gathers before writing them to its file.
SPOOL_BUFFER = 1 << 20
# How a JSON text written without ``allow_nan=False`` spells what the report may not hold.
NOT_JSON = (b"NaN", b"Infinity")
# The parts of a result, and of each of its metrics, the scorecard reads as they are.
_VIEW_KEYS = ("task", "case_id", "model", "run", "score", "valid", "blocked", "blockers",
              "not_scored", "renormalised", "usage", "notes", "judge_errors", "pass_bar",
              "copied_run")
_METRIC_VIEW_KEYS = ("value", "scored", "rating", "blocker", "flagged", "judge_error")
_REPEAT_KEYS = ("metric", "judge_error", "repeats", "repeat_spread", "repeats_disagree",
                "repeats_off_scale")


def packed(payload: dict[str, Any]) -> dict[str, Any]:
    """A test's payload as its report carries it: its result and output as one JSON text,
    the report's case entry as it would be written (:meth:`ResultSpool.keep` spools it
    unread), the later runs' results, if any, as another, what the scorecard reads of them
    as a third, and its golden case as its id and a fourth; the rest as it is.

    An xdist worker ships every report to the controller through execnet, whose serialiser
    walks a nested structure one value at a time in Python: for an entry of ~7 KB that took
    ~0.7 ms to write in the worker and ~1 ms to read in the controller, on top of the
    controller's own JSON encoding for the spool. One string crosses in one step, and the
    controller writes it to the spool, and most entries to the report, as it came."""
    if "result" not in payload:
        return payload
    rest = {k: v for k, v in payload.items() if k not in ("result", "output", "runs")}
    rest[ENTRY] = _text({**payload["result"], "output": payload.get("output")})
    if payload.get("runs"):
        rest[RUNS] = _text(payload["runs"])
    if GOLDEN in rest:
        case_id, golden, position = rest[GOLDEN]
        rest[GOLDEN] = [case_id, _text(golden), position]
    rest[VIEWS] = _text([scorecard_view(r) for r in [payload["result"], *payload.get("runs", [])]])
    return rest


def _text(value: Any) -> str:
    """``value`` as JSON text the spool and the report can write as UTF-8: a judge's reply or
    a custom metric's reason may still hold an unpaired surrogate (the engine replaced those
    of the output), which ends any UTF-8 encoding. Without the process's secrets: a custom
    metric's exception, a judge's reply or a model's output may quote a key."""
    return _redacted(replace_lone_surrogates(json.dumps(value, ensure_ascii=False)))


def _redacted(text: str) -> str:
    # The replacement holds no character JSON escapes: the text stays valid JSON.
    return redact_known(text) if knows_secrets() else text


def golden_entry(case: GoldenCase) -> dict[str, Any]:
    """A golden case as the report shows it to a reader: its task, its expected outcome and
    the first turns of its transcript, numbered as its judge and its details number them."""
    # Loaded with the engine's evaluation, which has run by the time a case is reported.
    from ..engine.judges.prompts import first_turn_number

    first = first_turn_number(case.task)
    turns = [f"turn {i}: {t.speaker + ': ' if t.speaker else ''}{t.text[:EXCERPT_CHARS]}"
             for i, t in enumerate(case.transcript[:EXCERPT_TURNS], start=first)]
    return {"task": case.task, "transcript_excerpt": turns, "turns": len(case.transcript),
            "expected_outcome": case.expected_outcome}


def scorecard_view(result: dict[str, Any]) -> dict[str, Any]:
    """What the scorecard reads of a result (``summary._for_scorecard`` gives the same
    from either): no reasons, no details but :data:`SCORECARD_DETAILS`, of the judge records
    only what :func:`kept_records` keeps: about a third of the text (2.7 of 8.4 KB an output
    in benchmarks/scale_bench.py's suites) to read back at the end of a run, where every
    result is read."""
    view = {k: result[k] for k in _VIEW_KEYS if k in result}
    metrics = {}
    for mid, m in (result.get("metrics") or {}).items():
        details = m.get("details") or {}
        metrics[mid] = {**{k: m[k] for k in _METRIC_VIEW_KEYS if k in m},
                        "details": {k: details[k] for k in SCORECARD_DETAILS if k in details}}
    view["metrics"] = metrics
    view["judge_records"] = kept_records(result)
    return view


def kept_records(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Of a result's judge records, the errors (whole: the run's counts read their reasons)
    and, of the others, only what the judge repeats' agreement is computed from."""
    return [r if r.get("judge_error") else {k: r[k] for k in _REPEAT_KEYS if k in r}
            for r in data.get("judge_records", [])
            if r.get("judge_error") or isinstance(r.get("repeats"), list)]


def entry_text(entry: dict[str, Any]) -> str:
    """A case entry as the JSON report writes it: one line, no NaN, no secret."""
    return _redacted(json.dumps(entry, ensure_ascii=False, allow_nan=False))


class ResultSpool:
    """The packed texts of a run's tests, in a temporary file opened with the first and
    dropped at the end of the run: a test's case entry, later runs and scorecard views,
    one line each, and the golden entry of each case as the first of its tests sent it."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        # Where the next line goes, and whether a read has moved the file's position since:
        # appends then need no seek, which would flush the write buffer every test.
        self._end = 0
        self._moved = False
        # Per test: where its lines start, and the length of each.
        self._spooled: dict[str, tuple[int, int, int, int]] = {}
        # Per case: where its golden entry is, its length, and the case's catalogue place.
        self._golden: dict[str, tuple[int, int, int]] = {}

    def keep(self, nodeid: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Spool what :func:`packed` made text; the rest of ``payload`` is returned."""
        if ENTRY in payload:
            entry = payload[ENTRY].encode("utf-8")
            runs = payload.get(RUNS, "").encode("utf-8")
            views = payload[VIEWS].encode("utf-8")
            self._spooled[nodeid] = (self._append(entry, runs, views), len(entry), len(runs),
                                     len(views))
            payload = {k: v for k, v in payload.items() if k not in (ENTRY, RUNS, VIEWS)}
        if GOLDEN in payload:
            case_id, golden, position = payload[GOLDEN]
            if case_id not in self._golden:
                text = golden.encode("utf-8")
                self._golden[case_id] = (self._append(text), len(text), position)
            payload = {k: v for k, v in payload.items() if k != GOLDEN}
        return payload

    def _append(self, *lines: bytes) -> int:
        if self._file is None:
            # Open for the whole run, closed by close() at its end (no single block). The
            # buffer holds a hundred tests' lines: one system call writes them all.
            self._file = tempfile.TemporaryFile(  # noqa: SIM115
                prefix="callqa-results-", buffering=SPOOL_BUFFER)
        elif self._moved:
            self._file.seek(self._end)
            self._moved = False
        offset = self._end
        text = b"\n".join(lines) + b"\n"
        self._file.write(text)
        self._end += len(text)
        return offset

    def _read(self, offset: int, size: int) -> bytes:
        assert self._file is not None
        # Seeking writes out what the buffer holds first.
        self._file.seek(offset)
        self._moved = True
        return self._file.read(size)

    def tests(self) -> list[str]:
        """The ids of the tests that spooled a result, sorted."""
        return sorted(self._spooled)

    def texts(self, nodeid: str) -> tuple[bytes, bytes]:
        """A test's case entry and later runs, as spooled (empty when it has none)."""
        offset, entry_size, runs_size, _ = self._spooled[nodeid]
        text = self._read(offset, entry_size + 1 + runs_size)
        return text[:entry_size], text[entry_size + 1:]

    def views(self, nodeid: str) -> list[dict[str, Any]]:
        """What the scorecard reads of each run a test spooled (:func:`scorecard_view`)."""
        offset, entry_size, runs_size, views_size = self._spooled[nodeid]
        views: list[dict[str, Any]] = json.loads(
            self._read(offset + entry_size + runs_size + 2, views_size))
        return views

    def entry(self, nodeid: str) -> dict[str, Any]:
        """A test's result, output and later runs' results, read back."""
        entry, runs = self.texts(nodeid)
        result: dict[str, Any] = json.loads(entry)
        output = result.pop("output")
        return {"result": result, "output": output, "runs": json.loads(runs) if runs else []}

    def golden(self, case_id: str) -> dict[str, Any] | None:
        """The golden entry the first test of the case sent, if one did."""
        return self.sent_golden(case_id) if case_id in self._golden else None

    def sent_golden(self, case_id: str) -> dict[str, Any]:
        """The golden entry a test sent for ``case_id`` (KeyError when none did)."""
        offset, size, _ = self._golden[case_id]
        entry: dict[str, Any] = json.loads(self._read(offset, size))
        return entry

    def golden_order(self, case_ids: set[str]) -> list[str] | None:
        """``case_ids`` in the catalogue's order, as the tests that sent their golden cases
        placed them; None when a test sent none for one of them."""
        if not case_ids <= self._golden.keys():
            return None
        return sorted(case_ids, key=lambda case_id: self._golden[case_id][2])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._end, self._moved = 0, False
        self._spooled.clear()
        self._golden.clear()
