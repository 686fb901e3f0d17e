"""Builders shared by the LLM-judge tests (also run as scripts by worker subprocesses)."""

from __future__ import annotations

import contextlib
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_callqa.engine.core.cases import GoldenCase

# Distinctive, so a search of every file written can prove it never leaked.
SECRET = "sk-callqa-test-SECRET-0123"
MODEL = "gpt-4o-mini"
WORKER = Path(__file__).with_name("worker.py")
# The unprivileged user and group most Unix systems have.
NOBODY = 65534


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


@contextlib.contextmanager
def bound_by_permissions() -> Iterator[None]:
    """Run the block where file permission bits apply. They do not bind root, so as root the
    block runs as the user and group ``nobody``, with no other group: root's files are then
    another user's, as on a cache directory two people share. The saved IDs stay root's, so
    the block can end by taking them back. Anyone else is bound already and stays as is."""
    if os.geteuid() != 0:
        yield
        return
    uids, gids, groups = os.getresuid(), os.getresgid(), os.getgroups()
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, gids[2])
    os.setresuid(NOBODY, NOBODY, uids[2])
    try:
        yield
    finally:
        os.setresuid(*uids)
        os.setresgid(*gids)
        os.setgroups(groups)


def qa_case(i: int, *, extra_question: bool = False) -> GoldenCase:
    questions = [{"question_id": "greeting", "text": "Did the agent greet?",
                  "type": "PASS_FAIL", "max_score": 1}]
    expected = [{"question_id": "greeting", "score": 1, "max_score": 1, "type": "PASS_FAIL",
                 "reason": "Agent said 'Thank you for calling' at 00:00."}]
    if extra_question:
        questions.append({"question_id": "resolution", "type": "SCORE", "max_score": 5})
        expected.append({"question_id": "resolution", "score": 5, "max_score": 5,
                         "type": "SCORE", "reason": "Replacement promised at 00:05."})
    return GoldenCase.model_validate({
        "id": f"judge-qa-{i:03d}",
        "task": "qa",
        "transcript": [
            {"speaker": "agent", "text": f"Thank you for calling, this is desk {i}.", "start": 0},
            {"speaker": "customer", "text": f"Order {500 + i} arrived broken.", "start": 3},
            {"speaker": "agent", "text": "I will send a replacement today.", "start": 5},
        ],
        "config": {"questions": questions},
        "expected_outcome": {"questions": expected},
    })


def qa_output(case: GoldenCase) -> dict[str, Any]:
    return {"questions": [
        {"question_id": q["question_id"], "score": q["score"], "max_score": q["max_score"],
         "type": q["type"], "reason": 'Agent said "Thank you for calling" at 00:00.'}
        for q in case.expected_outcome["questions"]
    ]}


def qa_items(count: int, start: int = 0) -> list[tuple[GoldenCase, Any, str]]:
    return [(case, qa_output(case), "candidate")
            for case in (qa_case(i) for i in range(start, start + count))]


def text_case() -> GoldenCase:
    """A text-task case: three judge-scored metrics per output (intent, highlights, facts)."""
    return GoldenCase.model_validate({
        "id": "judge-text-001",
        "task": "text",
        "transcript": [
            {"speaker": "customer", "text": "I was charged twice for order 77."},
            {"speaker": "agent", "text": "I see two charges of 40 dollars; I refunded one."},
        ],
        "config": {"sentiment_labels": ["positive", "neutral", "negative"]},
        "expected_outcome": {
            "sentiment": [{"sentence_id": 1, "text": "I was charged twice for order 77.",
                           "label": "negative"},
                          {"sentence_id": 2, "text": "I see two charges of 40 dollars; I "
                           "refunded one.", "label": "neutral"}],
            "summary": {"call_purpose": "Customer was charged twice for order 77.",
                        "highlights": ["Refund of 40 dollars issued"],
                        "call_extracted_info": {"order": "77", "refund": "40 dollars"}},
            "emotion": {"frustration": 0.7, "neutral": 0.3},
        },
    })


def tree_text(root: Path) -> str:
    """Every byte under ``root``, decoded leniently, for secret searches."""
    return "\n".join(p.read_bytes().decode("utf-8", "replace")
                     for p in sorted(root.rglob("*")) if p.is_file())


class _FixedReply(http.server.BaseHTTPRequestHandler):
    """Answers every POST with ``status`` and ``body``, served as JSON whatever it holds, and
    keeps each request's path, headers and raw body in ``seen``. A path under ``/moved`` is
    redirected (307, which keeps the method and body) to the same path without it."""

    body: bytes
    status: int
    seen: list[tuple[str, dict[str, str], bytes]]

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        self.seen.append((self.path, dict(self.headers.items()), raw))
        if self.path.startswith("/moved/"):
            self.send_response(307)
            self.send_header("location", self.path.removeprefix("/moved"))
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.send_response(self.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def fixed_reply(body: bytes, status: int = 200,
                ) -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    """A server on 127.0.0.1 that answers every POST with ``status`` and ``body``: its base
    URL (no path) and the requests it saw. Stopped on leaving the block."""
    seen: list[tuple[str, dict[str, str], bytes]] = []
    handler = type("Handler", (_FixedReply,), {"body": body, "status": status, "seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
