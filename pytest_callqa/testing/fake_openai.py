"""A fake OpenAI-compatible server: real HTTP on 127.0.0.1, for tests and benchmarks.

It serves ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` (and, given ``models``,
``GET /v1/models``) from a daemon thread on a free port, with a fixed latency per request
and scripted faults. It counts requests, distinct request bodies and the peak number of
requests in flight, and it always stops by itself (a cap on requests and on lifetime), so a
test that forgets it cannot hang a run.

Default replies are derived from the request, deterministically:

- a judge request (its first user message is the JSON the LLM judge sends) gets a valid
  verdict per metric, scored in the middle of the metric's scale;
- a generation request (JSON with ``task``/``transcript``/``config``, as the built-in
  generator sends) gets a structurally valid output for the task;
- anything else gets ``{}``.

``reply`` replaces the content of answers (to change a verdict, for instance).
``judge_noise`` makes a judge that does not always say the same: each verdict's score is,
with that probability, drawn from the metric's scale instead — seeded by ``seed`` and the
request body, so the same request always gets the same answer while a request that differs
(another run's seed) may not.

Faults (by name): ``429`` (with ``Retry-After``), ``500``, ``503``, ``timeout`` (no answer
for ``hang_s``), ``garbage`` (a reply whose content is not JSON), ``out_of_range`` (judge
scores off every scale), ``401`` (an error that echoes the presented API key — as careless
proxies do — to test that clients never repeat it), and the plain error statuses ``400``,
``403``, ``404``, ``408``, ``409`` and ``502`` (that status, a generic error body, nothing
else: for checking which statuses a client retries and which stop it). They are chosen per
request by, in order: ``fault_for(index, body)``, a ``schedule`` by arrival index, and
``fault_rate`` with ``faults``, where the draw depends only on ``seed``, the request body
and how many times that body was seen — so the same request meets the same fate in any
arrival order.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .fake_replies import (
    default_generation_reply,
    default_judge_reply,
    first_user_json,
    judge_items,
    noisy_judge_reply,
    schema_instance,
)

# Faults that answer their status with a generic error body and nothing else.
STATUS_FAULTS: tuple[str, ...] = ("400", "403", "404", "408", "409", "502")
FAULTS: tuple[str, ...] = ("429", "500", "503", "timeout", "garbage", "out_of_range", "401",
                           *STATUS_FAULTS)
GARBAGE_CONTENT = "Sure! Here is my assessment: the score is 0.9 {not json"
OUT_OF_RANGE_SCORE = 7.5
# Counters of a server in another process: GET <root>/_callqa/stats, POST <root>/_callqa/reset,
# GET <root>/_callqa/arrivals (when each request of the log arrived).
# These requests are not counted.
CONTROL_PREFIX = "/_callqa/"

ReplyFn = Callable[[dict[str, Any]], "str | Mapping[str, Any] | None"]
FaultFn = Callable[[int, dict[str, Any]], "str | None"]


@dataclass(frozen=True)
class RequestInfo:
    """One request as the server saw it; ``received`` is ``time.monotonic()`` on arrival."""

    index: int
    path: str
    body: dict[str, Any]
    body_hash: str
    fault: str | None
    authorization: str
    received: float


def _vector(text: str, dims: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(digest[i] - 127.5) / 127.5 for i in range(dims)]


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


@dataclass
class _Answer:
    status: int
    payload: Any
    headers: Mapping[str, str] | None = None
    close: bool = False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # The default backlog of 5 drops connection attempts when many clients connect at once,
    # and a dropped SYN costs a one-second retransmit that would swamp every measurement.
    request_queue_size = 256
    fake: FakeOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; with Nagle's algorithm the second waits for
    # the client's delayed ACK of the first, adding ~40 ms to every response.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.startswith(CONTROL_PREFIX):
            self.server.fake._control(self)
        else:
            self.server.fake._handle(self, raw)

    def do_GET(self) -> None:
        if self.path.startswith(CONTROL_PREFIX):
            self.server.fake._control(self)
        elif self.path.rstrip("/").endswith("/models") and self.server.fake.models is not None:
            self.server.fake._list_models(self)
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})

    def send_json(self, status: int, payload: Any,
                  headers: Mapping[str, str] | None = None) -> None:
        data = (payload if isinstance(payload, bytes)
                else json.dumps(payload).encode("utf-8"))
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            # The client gave up (a timeout fault): nothing left to answer.
            self.close_connection = True


class FakeOpenAIServer:
    """See the module docstring. Use as a context manager, or ``start()``/``stop()``.

    ``latency`` (seconds) is added to every request. ``retry_after`` is the ``Retry-After``
    header of 429 faults (seconds, or an HTTP date). ``hang_s`` is how long a ``timeout``
    fault keeps the client waiting. ``models`` is the list ``GET /v1/models`` answers (None:
    no listing, a 404, as some servers do); listings are counted in ``model_listings``, not in
    ``requests``. ``refuses`` lists ``response_format`` types the server answers with HTTP
    400 (as servers without structured outputs do) — or with ``refusal``, a ``(status,
    body)`` pair such as a real server's recorded answer; one it accepts is honoured:
    ``json_schema`` replies, and ``json_object`` ones that carry a ``schema``, are built from
    the schema. ``refuses_params`` lists request parameters (``seed``...) it answers with HTTP
    400. ``port`` 0 picks a free one. ``judge_noise`` is the chance that a judge verdict's
    score is drawn from its scale (module docstring).
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        seed: int = 0,
        fault_rate: float = 0.0,
        faults: Sequence[str] = ("429", "500"),
        schedule: Sequence[str | None] | None = None,
        fault_for: FaultFn | None = None,
        retry_after: str = "0",
        hang_s: float = 5.0,
        reply: ReplyFn | None = None,
        max_requests: int = 20_000,
        max_lifetime_s: float = 300.0,
        models: Sequence[str] | None = None,
        refuses: Sequence[str] = (),
        refuses_params: Sequence[str] = (),
        judge_noise: float = 0.0,
        refusal: tuple[int, Any] | None = None,
        port: int = 0,
    ) -> None:
        unknown = [f for f in [*faults, *(schedule or [])] if f is not None and f not in FAULTS]
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; known: {', '.join(FAULTS)}")
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be within [0, 1], got {fault_rate}")
        if not 0.0 <= judge_noise <= 1.0:
            raise ValueError(f"judge_noise must be within [0, 1], got {judge_noise}")
        self.judge_noise = judge_noise
        self.latency = latency
        self.seed = seed
        self.fault_rate = fault_rate
        self.faults = tuple(faults)
        self.schedule = list(schedule) if schedule is not None else None
        self.fault_for = fault_for
        self.retry_after = retry_after
        self.hang_s = hang_s
        self.reply = reply
        self.max_requests = max_requests
        self.max_lifetime_s = max_lifetime_s
        self.models = list(models) if models is not None else None
        self.refuses = tuple(refuses)
        self.refuses_params = tuple(refuses_params)
        self.refusal = refusal
        self.requested_port = port
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self.reset_counters()

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", self.requested_port), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.max_lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        with self._lock:
            server, self._server = self._server, None
            timer, self._timer = self._timer, None
        if server is None:
            return
        self._stopping.set()
        if timer is not None and timer is not threading.current_thread():
            timer.cancel()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- counters ---------------------------------------------------------------------------

    def reset_counters(self) -> None:
        with self._lock:
            self.requests = 0
            self.model_listings = 0
            self.in_flight = 0
            self.peak_in_flight = 0
            self.log: list[RequestInfo] = []
            self.faults_injected: Counter[str] = Counter()
            self._seen: Counter[str] = Counter()

    @property
    def unique_requests(self) -> int:
        with self._lock:
            return len(self._seen)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [info.body for info in self.log]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": self.requests, "unique_requests": len(self._seen),
                    "peak_in_flight": self.peak_in_flight, "in_flight": self.in_flight,
                    "faults": dict(self.faults_injected)}

    def _list_models(self, handler: _Handler) -> None:
        with self._lock:
            self.model_listings += 1
        handler.send_json(200, {"object": "list", "data": [
            {"id": name, "object": "model", "owned_by": "fake"} for name in self.models or []]})

    def _control(self, handler: _Handler) -> None:
        action = handler.path[len(CONTROL_PREFIX):].strip("/")
        if action == "reset" and handler.command == "POST":
            self.reset_counters()
            handler.send_json(200, self.stats())
        elif action == "stats":
            handler.send_json(200, self.stats())
        elif action == "arrivals":
            # time.monotonic() of each request's arrival: on Linux one clock for every
            # process, so a benchmark can place them against its own.
            with self._lock:
                arrived = [info.received for info in self.log]
            handler.send_json(200, {"monotonic": arrived})
        else:
            handler.send_json(404, {"error": {"message": f"no control action {action!r}"}})

    def wait(self) -> None:
        """Block until the server stops (its lifetime ends, or :meth:`stop` is called)."""
        self._stopping.wait()

    # --- requests ---------------------------------------------------------------------------

    def _choose_fault(self, index: int, body: dict[str, Any], body_hash: str,
                      occurrence: int) -> str | None:
        if self.fault_for is not None:
            return self.fault_for(index, body)
        if self.schedule is not None and index < len(self.schedule):
            return self.schedule[index]
        if self.fault_rate > 0:
            rng = random.Random(f"{self.seed}:{body_hash}:{occurrence}")
            if rng.random() < self.fault_rate:
                return rng.choice(self.faults)
        return None

    def _handle(self, handler: _Handler, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        body_hash = hashlib.sha256(raw).hexdigest()
        with self._lock:
            index = self.requests
            self.requests += 1
            occurrence = self._seen[body_hash]
            self._seen[body_hash] += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if index >= self.max_requests:
                answer = _Answer(503, {"error": {"message": "fake server request cap reached"}})
            else:
                answer = self._serve(handler, index, body, body_hash, occurrence)
        except Exception as exc:
            # A broken ``reply``/``fault_for`` callback must show up in the test, not as a
            # dropped connection the client would retry.
            answer = _Answer(500, {"error": {"message": f"fake server failed: {exc!r}"}})
        finally:
            # Out of flight before the answer is written: a client that sends its next
            # request on receiving this answer must never be counted twice at once.
            with self._lock:
                self.in_flight -= 1
        if answer.close:
            handler.close_connection = True
        handler.send_json(answer.status, answer.payload, answer.headers)

    def _serve(self, handler: _Handler, index: int, body: dict[str, Any], body_hash: str,
               occurrence: int) -> _Answer:
        fault = self._choose_fault(index, body, body_hash, occurrence)
        auth = handler.headers.get("Authorization", "")
        with self._lock:
            self.log.append(RequestInfo(index, handler.path, body, body_hash, fault, auth,
                                        time.monotonic()))
            if fault is not None:
                self.faults_injected[fault] += 1
        if self.latency > 0:
            self._stopping.wait(self.latency)
        return self._respond(handler.path, body, fault, auth)

    def _respond(self, path: str, body: dict[str, Any], fault: str | None,
                 auth: str) -> _Answer:
        if fault == "timeout":
            self._stopping.wait(self.hang_s)
            return _Answer(500, {"error": {"message": "answered too late"}}, close=True)
        if fault == "429":
            return _Answer(429, {"error": {"message": "Rate limit reached (fake)",
                                           "type": "rate_limit_exceeded"}},
                           {"Retry-After": self.retry_after})
        if fault in ("500", "503"):
            return _Answer(int(fault), {"error": {"message": "The server had an error (fake)",
                                                  "type": "server_error"}})
        if fault in STATUS_FAULTS:
            return _Answer(int(fault), {"error": {"message": "The request failed (fake)",
                                                  "type": "fake_status"}})
        if fault == "401":
            presented = auth.removeprefix("Bearer ")
            return _Answer(401, {"error": {
                "message": f"Incorrect API key provided: {presented}. You can find your API "
                           "key at https://example.invalid/keys.",
                "type": "invalid_request_error", "code": "invalid_api_key"}})
        route = path.rstrip("/")
        if route.endswith("/chat/completions"):
            refused = [name for name in self.refuses_params if name in body]
            if refused:
                return _Answer(400, {"error": {
                    "message": f"Unrecognized request argument supplied: {refused[0]}",
                    "type": "invalid_request_error", "param": refused[0]}})
            kind = (body.get("response_format") or {}).get("type")
            if kind in self.refuses and self.refusal is not None:
                return _Answer(self.refusal[0], self.refusal[1])
            if kind in self.refuses:
                return _Answer(400, {"error": {
                    "message": f"response_format type {kind!r} is not supported by this "
                               "server", "type": "invalid_request_error",
                    "param": "response_format"}})
            return _Answer(200, self._completion(body, fault))
        if route.endswith("/embeddings"):
            return _Answer(200, self._embeddings(body))
        return _Answer(404, {"error": {"message": f"no route {path}"}})

    def _content(self, body: dict[str, Any], fault: str | None) -> str:
        content = self._plain_content(body, fault)
        items = judge_items(first_user_json(body))
        if self.judge_noise > 0 and items and fault is None:
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
            content = noisy_judge_reply(
                content, items, lambda ident: random.Random(f"{self.seed}:{digest}:{ident}"),
                self.judge_noise)
        return content

    def _plain_content(self, body: dict[str, Any], fault: str | None) -> str:
        inputs = first_user_json(body)
        items = judge_items(inputs)
        if fault == "garbage":
            return GARBAGE_CONTENT
        if fault == "out_of_range" and items:
            return default_judge_reply(items, lambda _item: OUT_OF_RANGE_SCORE)
        if self.reply is not None:
            custom = self.reply(body)
            if custom is not None:
                return custom if isinstance(custom, str) else json.dumps(custom)
        response_format = body.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema") \
            if response_format.get("type") == "json_schema" else response_format.get("schema")
        if isinstance(schema, dict) and (items or not isinstance(inputs, dict)):
            value = schema_instance(schema)
            if items and isinstance(value, dict):
                # The texts and counts a judge reply carries, as the unconstrained default
                # reply has them beside the schema's score (which its counts may move: 0.5
                # of 5 facts is 0.4).
                scores = {ident: v.get("score") for ident, v in value.items()
                          if isinstance(v, dict)}
                defaults = json.loads(default_judge_reply(
                    items, lambda item: scores.get(str(item.get("metric")))))
                for ident, verdict in value.items():
                    if isinstance(verdict, dict) and ident in defaults:
                        verdict.update({k: v for k, v in defaults[ident].items()
                                        if k in verdict})
            return json.dumps(value)
        if items:
            return default_judge_reply(items)
        if isinstance(inputs, dict):
            generated = default_generation_reply(inputs)
            if generated is not None:
                return generated
        return "{}"

    def _completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        content = self._content(body, fault)
        prompt = "".join(str(m.get("content", "")) for m in body.get("messages") or []
                         if isinstance(m, dict))
        prompt_tokens, completion_tokens = _tokens(prompt), _tokens(content)
        return {
            "id": f"chatcmpl-fake-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw or []]
        tokens = sum(_tokens(t) for t in texts)
        return {
            "object": "list", "model": body.get("model", "fake"),
            "data": [{"object": "embedding", "index": i, "embedding": _vector(t)}
                     for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until killed or the lifetime ends; print the base URL on the first line."""
    # Only the command-line server needs these.
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m pytest_callqa.testing.fake_openai",
                                     description="A fake OpenAI-compatible server.")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--faults", default="429,500", help="comma-separated fault names")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--judge-noise", type=float, default=0.0,
                        help="chance that a judge verdict's score is drawn from its scale")
    parser.add_argument("--retry-after", default="0")
    parser.add_argument("--max-lifetime", type=float, default=600.0, help="seconds")
    args = parser.parse_args(argv)
    server = FakeOpenAIServer(
        latency=args.latency, fault_rate=args.fault_rate, seed=args.seed,
        faults=[f for f in args.faults.split(",") if f], retry_after=args.retry_after,
        max_lifetime_s=args.max_lifetime, judge_noise=args.judge_noise,
    )
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    with server, contextlib.suppress(KeyboardInterrupt):
        print(server.base_url, flush=True)
        server.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
