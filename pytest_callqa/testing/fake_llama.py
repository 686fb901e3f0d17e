"""A stand-in for ``python -m llama_cpp.server`` in tests: the same command line, the fake
OpenAI-compatible server behind it, and the llama.cpp dialect in front of it — ``json_schema``
refused (with the real server's recorded answer when one is given), ``json_object`` with a
``schema`` honoured, the model listed under its alias.

The plugin's managed-server code runs it unchanged (the tests point
``pytest_callqa.engine.llm.server.SERVER_MODULE`` here), so starting, sharing with xdist
workers, stopping and interrupting are tested without building llama.cpp. Environment
variables script what a real server does on a bad day:

- ``CALLQA_FAKE_LLAMA_REFUSAL``: a JSON file ``{"status": ..., "body": ...}``, the answer to
  a ``json_schema`` request (default: a 400);
- ``CALLQA_FAKE_LLAMA_FAIL``: a message to print before exiting with status 3 (a server that
  cannot load its model);
- ``CALLQA_FAKE_LLAMA_HANG=1``: never serves (a server stuck loading);
- ``CALLQA_FAKE_LLAMA_IGNORE_TERM=1``: SIGTERM is ignored (a server busy generating);
- ``CALLQA_FAKE_LLAMA_LATENCY``: seconds each request takes;
- ``CALLQA_FAKE_LLAMA_PIDFILE``: a file to append the process id to once serving (one line
  per server started).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .fake_openai import FakeOpenAIServer

# A fake server never outlives a test run by much, even if nothing stops it.
MAX_LIFETIME_S = 600.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_callqa.testing.fake_llama")
    parser.add_argument("--model", required=True)
    parser.add_argument("--model_alias", default=None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--n_ctx", type=int, default=2048)
    parser.add_argument("--n_threads", type=int, default=1)
    parser.add_argument("--n_threads_batch", type=int, default=1)
    args, _unknown = parser.parse_known_args(argv)
    failure = os.environ.get("CALLQA_FAKE_LLAMA_FAIL")
    if failure:
        print(f"loading {args.model}", flush=True)
        print(failure, flush=True)
        return 3
    if os.environ.get("CALLQA_FAKE_LLAMA_HANG") == "1":
        time.sleep(MAX_LIFETIME_S)
        return 0
    refusal = None
    recorded = os.environ.get("CALLQA_FAKE_LLAMA_REFUSAL")
    if recorded:
        data = json.loads(Path(recorded).read_text(encoding="utf-8"))
        refusal = (int(data["status"]), data["body"])
    server = FakeOpenAIServer(
        port=args.port, refuses=("json_schema",), refusal=refusal,
        models=[args.model_alias or args.model], max_lifetime_s=MAX_LIFETIME_S,
        latency=float(os.environ.get("CALLQA_FAKE_LLAMA_LATENCY") or 0.0),
    )
    if os.environ.get("CALLQA_FAKE_LLAMA_IGNORE_TERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: server.stop())
    with server:
        pidfile = os.environ.get("CALLQA_FAKE_LLAMA_PIDFILE")
        if pidfile:
            with Path(pidfile).open("a", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()}\n")
        print(f"fake llama.cpp server for {args.model} at {server.base_url} "
              f"(n_ctx {args.n_ctx})", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
