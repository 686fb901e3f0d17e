"""The local judge's server manager, against the fake llama.cpp server module: start, the
context window it reports, stop (SIGKILL when SIGTERM is ignored), and a server that cannot
start. Every server here is a subprocess on 127.0.0.1 that stops with its test."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_callqa.engine.llm import server
from pytest_callqa.engine.llm.server import (
    LocalServer,
    ServerError,
    ServerInfo,
    default_model,
    file_digest,
    model_alias,
    model_identity,
    reported_context,
    server_environment,
)
from pytest_callqa.testing import FakeOpenAIServer

# A server these tests kill, or start on a taken port, keeps its log for the user to read.
pytestmark = pytest.mark.usefixtures("temp_files_in_tmp_path")

FAKE_MODULE = "pytest_callqa.testing.fake_llama"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-judge.Q4_0.gguf"
    path.write_bytes(b"GGUF")
    return path


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[LocalServer]]:
    """Servers the test starts on the fake module; each is stopped afterwards."""
    monkeypatch.setattr(server, "SERVER_MODULE", FAKE_MODULE)
    started: list[LocalServer] = []
    yield started
    for each in started:
        each.stop()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_server_starts_serves_its_alias_and_stops(model: Path,
                                                    servers: list[LocalServer]) -> None:
    local = LocalServer(model, n_ctx=2048, threads=1)
    servers.append(local)
    info = local.start()
    assert info.model == "tiny-judge.Q4_0" == model_alias(model)
    assert info.url == f"http://127.0.0.1:{local.port}/v1"
    # The fake, like llama-cpp-python 0.3.36, reports no window: the configured one holds.
    assert info.n_ctx == 2048
    assert local.start() is info  # started once
    pid = local.pid
    assert pid is not None and alive(pid)
    log = local.log_path
    assert log is not None and "fake llama.cpp server" in local.log_tail()
    assert local.stop() == 0
    assert not alive(pid) and local.pid is None and local.info is None
    assert not log.exists()  # a temporary log goes with a server that ran well
    assert local.stop() is None


def test_a_server_that_ends_by_itself_keeps_its_log(model: Path,
                                                    servers: list[LocalServer]) -> None:
    # Killed mid-run (the out-of-memory killer): the judge errors said only "connection
    # failed", and stopping it deleted the log that tells why.
    local = LocalServer(model, n_ctx=2048, threads=1)
    servers.append(local)
    local.start()
    assert local.exit_status() is None
    pid, log = local.pid, local.log_path
    assert pid is not None and log is not None
    os.kill(pid, signal.SIGKILL)
    while local.exit_status() is None:
        time.sleep(0.02)
    assert local.exit_status() == -signal.SIGKILL
    assert local.stop() == -signal.SIGKILL
    assert log.exists() and local.exit_status() is None
    log.unlink()


def test_another_program_on_the_servers_port_is_not_taken_for_it(
        model: Path, servers: list[LocalServer], monkeypatch: pytest.MonkeyPatch) -> None:
    # The port was free when chosen; another program took it before the server bound it.
    # Its answers were taken for this server's: every verdict came from someone else's model.
    with FakeOpenAIServer(models=["tiny-judge.Q4_0"]) as other:
        monkeypatch.setattr(server, "_free_port", lambda: other.port)
        local = LocalServer(model, n_ctx=2048, threads=1, startup_timeout_s=30.0)
        servers.append(local)
        with pytest.raises(ServerError, match="exited with status"):
            local.start()
    assert local.pid is None


def test_a_port_no_table_lists_a_listener_on_cannot_tell_whose_it_is() -> None:
    # WSL1's /proc/net/tcp is empty: "nobody listens" there made a server that answered wait
    # out its whole start-up timeout. Only another process seen listening is refused.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert server._listening_pids(port) is None
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert server._listening_pids(listening.getsockname()[1]) == {os.getpid()}


def test_the_servers_own_settings_are_left_out_of_its_environment() -> None:
    environ = {"HOST": "0.0.0.0", "port": "8765", "API_KEY": "x", "CONFIG_FILE": "c.json",
               "PATH": "/usr/bin", "OPENAI_API_KEY": "sk"}
    # A package without a settings file: the variables its __main__ reads itself.
    assert server_environment(FAKE_MODULE, environ) == {
        "API_KEY": "x", "PATH": "/usr/bin", "OPENAI_API_KEY": "sk"}


def test_llama_cpps_settings_are_read_from_its_source() -> None:
    if importlib.util.find_spec("llama_cpp") is None:  # found without loading its library
        pytest.skip("the local extra (llama-cpp-python) is not installed")
    environ = {"API_KEY": "x", "chat_format": "chatml", "N_GPU_LAYERS": "9", "PATH": "/bin"}
    assert server_environment("llama_cpp.server", environ) == {"PATH": "/bin"}


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace(
        model: Path, servers: list[LocalServer], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLQA_FAKE_LLAMA_IGNORE_TERM", "1")
    local = LocalServer(model, threads=1, stop_grace_s=0.5)
    servers.append(local)
    local.start()
    pid = local.pid
    assert pid is not None
    started = time.monotonic()
    assert local.stop() == -9  # SIGKILL
    assert 0.5 <= time.monotonic() - started < 5
    assert not alive(pid)


def test_a_server_that_cannot_start_is_an_error_with_its_log(
        model: Path, servers: list[LocalServer], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLQA_FAKE_LLAMA_FAIL", "error loading model: unknown architecture")
    local = LocalServer(model, threads=1)
    servers.append(local)
    with pytest.raises(ServerError) as caught:
        local.start()
    message = str(caught.value)
    assert "exited with status 3 while starting" in message
    assert "error loading model: unknown architecture" in message
    assert f"--model {model}" in message
    assert local.pid is None and local.log_path is not None and local.log_path.exists()
    local.log_path.unlink()


def test_a_server_that_never_answers_times_out(model: Path, servers: list[LocalServer],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLQA_FAKE_LLAMA_HANG", "1")
    local = LocalServer(model, threads=1, startup_timeout_s=0.5, stop_grace_s=0.5,
                        log=model.with_suffix(".log"))
    servers.append(local)
    started = time.monotonic()
    with pytest.raises(ServerError, match=r"did not answer within 0\.5 s"):
        local.start()
    assert time.monotonic() - started < 5
    assert local.pid is None


def test_a_missing_server_module_ends_the_start_with_its_error(
        model: Path, servers: list[LocalServer], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "SERVER_MODULE", "pytest_callqa.testing.fake_llama_absent")
    local = LocalServer(model, threads=1, log=model.with_suffix(".log"))
    servers.append(local)
    with pytest.raises(ServerError, match="exited with status 1 while starting"):
        local.start()
    assert local.pid is None
    assert "No module named pytest_callqa.testing.fake_llama_absent" in local.log_tail()


def test_a_model_that_is_not_a_file_is_refused(tmp_path: Path,
                                               servers: list[LocalServer]) -> None:
    local = LocalServer(tmp_path / "missing.gguf")
    with pytest.raises(ServerError, match=r"missing.gguf is not a file: pass a \.gguf file"):
        local.start()
    assert local.pid is None
    with pytest.raises(ValueError, match="n_ctx must be at least 1, got 0"):
        LocalServer(tmp_path / "x.gguf", n_ctx=0)
    with pytest.raises(ValueError, match="parallel must be at least 1, got 0"):
        LocalServer(tmp_path / "x.gguf", parallel=0)


def test_the_reported_window_wins_over_the_configured_one(
        model: Path, servers: list[LocalServer], monkeypatch: pytest.MonkeyPatch) -> None:
    local = LocalServer(model, n_ctx=2048, threads=1)
    servers.append(local)
    monkeypatch.setattr(server, "reported_context", lambda url, timeout=5.0: 8192)
    assert local.start().n_ctx == 8192


@pytest.mark.parametrize(("props", "models", "window"), [
    ({"default_generation_settings": {"n_ctx": 4096}}, None, 4096),  # llama.cpp's server
    ({"n_ctx": 3000}, None, 3000),
    (None, {"data": [{"id": "m", "meta": {"n_ctx": 2048, "n_ctx_train": 8192}}]}, 2048),
    (None, {"data": [{"id": "m", "owned_by": "me"}]}, None),  # llama-cpp-python 0.3.36
    ({"n_ctx": 0}, {"data": [{"meta": {"n_ctx": True}}]}, None),
    ({"n_ctx": "4096"}, {"data": "nothing"}, None),
])
def test_reported_context_reads_what_a_server_says(
        monkeypatch: pytest.MonkeyPatch, props: object, models: object,
        window: int | None) -> None:
    def answer(url: str, timeout: float) -> object:
        found = props if url.endswith("/props") else models
        if found is None:
            raise OSError("HTTP Error 404: Not Found")
        return found

    monkeypatch.setattr(server, "_get_json", answer)
    assert reported_context("http://127.0.0.1:1/v1") == window


def test_server_info_from_a_worker_input() -> None:
    info = ServerInfo(url="http://127.0.0.1:5/v1", model="m", n_ctx=4096, identity="local:m")
    assert ServerInfo.from_dict(info.to_dict()) == info
    with pytest.raises(ValueError, match="incomplete"):
        ServerInfo.from_dict({**info.to_dict(), "identity": ""})
    with pytest.raises(ValueError, match="must be an object, got NoneType"):
        ServerInfo.from_dict(None)
    with pytest.raises(ValueError, match="incomplete"):
        ServerInfo.from_dict({"url": "http://127.0.0.1:5/v1", "model": "m", "n_ctx": 0})
    with pytest.raises(ValueError, match="incomplete"):
        ServerInfo.from_dict({"url": "http://127.0.0.1:5/v1", "n_ctx": 4096})


def test_a_model_file_is_known_by_its_content_not_its_folder(tmp_path: Path) -> None:
    # Two MiB and a bit. Before, only the first and last MiB were read: a file of the same
    # name and size with other weights in its middle reused the first model's verdicts.
    body = bytearray(b"GGUF" + bytes(2 * (1 << 20) + 100))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, moved = tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf"
    first.write_bytes(body)
    moved.write_bytes(body)
    identity = model_identity(first, FAKE_MODULE)
    assert identity == model_identity(moved, FAKE_MODULE)
    assert re.fullmatch(rf"local:{re.escape(FAKE_MODULE)}==[^/]+/m\.gguf@[0-9a-f]{{32}}",
                        identity)
    for at in (10, len(body) // 2, len(body) - 10):
        changed = bytearray(body)
        changed[at] = 1
        moved.write_bytes(changed)
        assert model_identity(moved, FAKE_MODULE) != identity, at
    moved.write_bytes(body + b"\0")
    assert model_identity(moved, FAKE_MODULE) != identity
    assert model_identity(first, "llama_cpp.server") != identity


def test_a_model_files_digest_is_remembered_until_the_file_changes(tmp_path: Path) -> None:
    model, memo = tmp_path / "m.gguf", tmp_path / "cache" / "digests.json"
    model.write_bytes(b"GGUF" + bytes(3000))
    whole = hashlib.sha256(model.read_bytes()).hexdigest()
    assert file_digest(model, memo) == whole
    assert not memo.exists()  # read, never written, without remember (a read-only cache)
    assert file_digest(model, memo, remember=True) == whole
    # As the cache's entries: readable by every user of a shared cache (mkstemp's 0600
    # had each other user hash the model again on every start).
    umask = os.umask(0)
    os.umask(umask)
    assert memo.stat().st_mode & 0o777 == 0o666 & ~umask
    [entry] = json.loads(memo.read_text(encoding="utf-8")).values()
    # Read back while the file is unchanged: a start does not hash gigabytes again.
    entry["sha256"] = "remembered"
    memo.write_text(json.dumps({str(model.resolve()): entry}), encoding="utf-8")
    assert file_digest(model, memo) == "remembered"
    assert model_identity(model, FAKE_MODULE, memo=memo).endswith("@remembered")
    # Rewritten in place (same size): hashed again, and remembered anew.
    model.write_bytes(b"GGUF" + bytes(2999) + b"\1")
    changed = hashlib.sha256(model.read_bytes()).hexdigest()
    assert file_digest(model, memo, remember=True) == changed != whole
    assert file_digest(model, memo) == changed
    memo.write_text("not json", encoding="utf-8")
    assert file_digest(model, memo) == changed
    assert list(memo.parent.glob(".digests-*")) == []


def test_the_default_model_is_the_smollm2_file(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "callqa_fake_smollm2"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "other.gguf").write_bytes(b"GGUF")
    (package / server.SMOLLM2_FILE).write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(server, "SMOLLM2_PACKAGE", "callqa_fake_smollm2")
    assert default_model() == package / server.SMOLLM2_FILE
    monkeypatch.setattr(server, "SMOLLM2_PACKAGE", "callqa_no_such_package")
    assert default_model() is None


@pytest.mark.skipif(sys.platform != "linux", reason="the death signal is Linux's prctl")
def test_a_killed_parent_takes_its_server_with_it(model: Path) -> None:
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from pytest_callqa.engine.llm import server
        server.SERVER_MODULE = {FAKE_MODULE!r}
        local = server.LocalServer(Path({str(model)!r}), threads=1,
                                   log=Path({str(model.with_suffix(".log"))!r}))
        local.start()
        print(local.pid, flush=True)
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert alive(pid)
    finally:
        parent.kill()  # SIGKILL: no atexit, no stop()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 10
    while alive(pid) and not zombie(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid) or zombie(pid)


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return False
