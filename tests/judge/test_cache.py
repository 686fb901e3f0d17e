"""The reply cache: atomic entries, damaged and edited entries, keys by endpoint, killed
writers, several processes, and the spend ledger the budget keeps in it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.evaluate import evaluate_many
from pytest_callqa.engine.llm.budget import SpendLedger
from pytest_callqa.engine.llm.cache import JudgeCache, content_key

from .conftest import make_judge, make_runner
from .helpers import SECRET, WORKER, bound_by_permissions, qa_items, tree_text, umask
from .test_llm_judge import requests_for


def entry_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("??/*.json"))


def test_entries_round_trip_and_live_under_their_key(cache_dir: Path) -> None:
    cache = JudgeCache(cache_dir)
    key = content_key({"a": 1})
    assert cache.get(key) is None
    assert cache.put(key, {"content": "{}", "usage": {"prompt_tokens": 3}})
    assert cache.entry_path(key) == cache_dir / key[:2] / f"{key}.json"
    assert cache.get(key) == {"content": "{}", "usage": {"prompt_tokens": 3}}
    assert (cache_dir / ".gitignore").read_text().endswith("*\n")
    assert cache.stats.hits == 1 and cache.stats.misses == 1 and cache.stats.writes == 1


@pytest.mark.parametrize("damage", [
    lambda text: text[: len(text) // 2],  # cut short
    lambda text: "",  # empty
    lambda text: "\x00\x01garbage",  # not JSON
    lambda text: json.dumps({**json.loads(text), "key": "someone-else"}),  # wrong key
    lambda text: json.dumps([1, 2]),  # wrong shape
    lambda text: text.replace('"x"', '"edited by hand"'),  # value no longer matches digest
    lambda text: json.dumps({**json.loads(text), "digest": None}),  # digest removed
    lambda text: json.dumps({**json.loads(text), "format": None}),  # no format at all
], ids=["cut-short", "empty", "not-json", "wrong-key", "wrong-shape", "edited", "no-digest",
        "no-format"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(cache_dir: Path, damage: Any) -> None:
    cache = JudgeCache(cache_dir)
    key = content_key({"b": 2})
    cache.put(key, {"content": "x"})
    path = cache.entry_path(key)
    path.write_text(damage(path.read_text()))
    assert cache.lookup(key).status == "damaged"
    assert cache.get(key) is None
    assert cache.stats.damaged == 2 and cache.stats.hits == 0
    assert cache.put(key, {"content": "y"})
    assert JudgeCache(cache_dir).get(key) == {"content": "y"}


def test_an_entry_of_the_older_format_is_a_plain_miss(cache_dir: Path) -> None:
    cache = JudgeCache(cache_dir)
    key = content_key({"c": 3})
    path = cache.entry_path(key)
    path.parent.mkdir(parents=True)
    # What version 1 wrote: no digest.
    path.write_text(json.dumps({"format": 1, "key": key, "written": 0.0,
                                "value": {"content": "old"}}))
    assert cache.lookup(key).status == "outdated" and cache.get(key) is None
    assert cache.stats.outdated == 2 and cache.stats.damaged == 0
    cache.put(key, {"content": "new"})
    assert cache.get(key) == {"content": "new"}


@pytest.mark.parametrize("damage", ["cut-short", "edited"])
def test_a_damaged_entry_is_judged_again_and_counted(fake: Any, cache_dir: Path,
                                                     damage: str) -> None:
    server = fake()
    items = qa_items(3)
    evaluate_many(items, judge=make_judge(server, JudgeCache(cache_dir)), benchmarks=False)
    damaged = entry_files(cache_dir)[0]
    good = damaged.read_text()
    if damage == "cut-short":
        damaged.write_text(good[:40])
    else:
        # A verdict edited by hand: still valid JSON and a valid score, but not what the judge
        # said. Only the digest tells.
        record = json.loads(good)
        reply = json.loads(record["value"]["content"])
        reply["score"] = 1.0
        record["value"]["content"] = json.dumps(reply)
        damaged.write_text(json.dumps(record))
    judge = make_judge(server, JudgeCache(cache_dir))
    results = evaluate_many(items, judge=judge, benchmarks=False)
    assert server.requests == 4  # 3 cold + the damaged one
    assert [r.metric("evidence_backed_reasoning").value for r in results] == [0.5] * 3
    assert all(not r.metric("evidence_backed_reasoning").flagged for r in results)
    summary = judge.usage_summary()
    assert summary["damaged"] == 1 and summary["cache_hits"] == 2
    # The good reply replaced the damaged entry: the next run reads all three.
    assert json.loads(damaged.read_text())["format"] == 2
    again = make_judge(server, JudgeCache(cache_dir))
    evaluate_many(items, judge=again, benchmarks=False)
    assert server.requests == 4
    assert again.usage_summary()["damaged"] == 0


def test_entries_a_newer_version_wrote_are_asked_again_and_left_as_they_are(
    fake: Any, cache_dir: Path
) -> None:
    # Two versions of the tool sharing one cache (two branches in CI) must not take turns
    # overwriting each other's entries, nor call the other's entries damaged.
    server = fake()
    items = qa_items(2)
    evaluate_many(items, judge=make_judge(server, JudgeCache(cache_dir)), benchmarks=False)
    for path in entry_files(cache_dir):
        path.write_text(json.dumps({**json.loads(path.read_text()), "format": 3}))
    theirs = {path: path.read_text() for path in entry_files(cache_dir)}
    judge = make_judge(server, JudgeCache(cache_dir))
    evaluate_many(items, judge=judge, benchmarks=False)
    assert server.requests == 4
    assert judge.usage_summary()["damaged"] == 0
    assert {path: path.read_text() for path in entry_files(cache_dir)} == theirs


@pytest.mark.skipif(os.geteuid() != 0, reason=(
    "acting as a second user takes root; test_cache_entries.py and test_cache_locks.py test "
    "files this user may only read as any user"))
@pytest.mark.parametrize("mask", [0o000, 0o022])
def test_a_cache_another_user_made_serves_this_one(fake: Any, shared_dir: Path,
                                                   mask: int) -> None:
    # One user fills the cache (a team share, a CI volume), another runs on it. With umask 0
    # the second may write too; with the default umask it reads what the first wrote and
    # finds it may not write, which is counted and named rather than raised.
    server = fake()
    root = shared_dir / "cache"
    with umask(mask):
        evaluate_many(qa_items(2), judge=make_judge(server, JudgeCache(root)), benchmarks=False)
    cache = JudgeCache(root)
    with bound_by_permissions():
        results = evaluate_many(qa_items(3), judge=make_judge(server, cache), benchmarks=False)
    assert [r.metric("evidence_backed_reasoning").value for r in results] == [0.5] * 3
    assert server.requests == 3
    assert cache.stats.hits == 2
    if mask == 0o000:
        assert (cache.stats.writes, cache.stats.write_errors, cache.stats.error) == (1, 0, None)
        assert cache.stats.lock_error is None
    else:
        assert (cache.stats.writes, cache.stats.write_errors) == (0, 1)
        assert cache.stats.error is not None and cache.stats.error.startswith(
            f"[Errno 13] Permission denied: '{root}/")
        assert cache.stats.lock_error == f"{root / 'slots'} is not writable"


def test_replies_cached_for_one_server_are_not_used_for_another(fake: Any,
                                                                cache_dir: Path) -> None:
    first, second = fake(), fake()
    items = qa_items(2)
    evaluate_many(items, judge=make_judge(first, JudgeCache(cache_dir)), benchmarks=False)
    # Same model name, same prompts, another base URL: asked again, cached separately.
    evaluate_many(items, judge=make_judge(second, JudgeCache(cache_dir)), benchmarks=False)
    assert first.requests == 2 and second.requests == 2
    assert len(entry_files(cache_dir)) == 4
    # Each server's replies are then read back for that server only.
    for server in (first, second):
        judge = make_judge(server, JudgeCache(cache_dir))
        evaluate_many(items, judge=judge, benchmarks=False)
        assert judge.usage_summary()["cache_hits"] == 2
    assert first.requests == 2 and second.requests == 2


def test_modes_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cache mode must be one of off, ro, rw"):
        JudgeCache(tmp_path, "sometimes")
    with pytest.raises(ValueError, match="needs a directory"):
        JudgeCache(None, "rw")
    ro = JudgeCache(tmp_path / "ro", "ro")
    assert ro.put("ab" * 32, {"content": "x"}) is False
    assert not (tmp_path / "ro").exists()


WRITER = textwrap.dedent("""
    import sys
    from pytest_callqa.engine.llm.cache import JudgeCache
    cache = JudgeCache(sys.argv[1])
    big = "x" * 2_000_000  # large enough that a kill can land mid-write
    i = 0
    while True:
        key = f"{i:064x}"
        cache.put(key, {"content": big, "n": i})
        print(key, flush=True)
        i += 1
""")


def test_a_writer_killed_mid_write_leaves_only_whole_entries(cache_dir: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(cache_dir)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    written = [proc.stdout.readline().strip() for _ in range(3)]
    time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    cache = JudgeCache(cache_dir)
    for key in written:
        entry = cache.get(key)
        assert entry is not None and len(entry["content"]) == 2_000_000
    # Every file that looks like an entry is a whole one; an interrupted write can only
    # leave a hidden temporary file, which is never read as an entry.
    for path in entry_files(cache_dir):
        assert cache.get(path.stem) is not None, path
    assert cache.stats.unreadable == 0


def test_stale_temporary_files_are_swept(cache_dir: Path) -> None:
    cache = JudgeCache(cache_dir)
    key = "ab" * 32
    folder = cache_dir / key[:2]
    folder.mkdir(parents=True)
    stale = folder / f".{key}.dead.tmp"
    fresh = folder / f".{key}.live.tmp"
    stale.write_text("partial")
    fresh.write_text("partial")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    cache.put(key, {"content": "x"})
    assert not stale.exists() and fresh.exists()


def test_a_killed_judge_run_leaves_a_usable_cache(fake: Any, cache_dir: Path) -> None:
    server = fake(latency=0.05)
    proc = subprocess.Popen([sys.executable, str(WORKER), server.base_url, str(cache_dir),
                             "20", "2"], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while server.requests < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.stdout is not None
    proc.stdout.close()
    cached = len(entry_files(cache_dir))
    assert 4 <= cached < 20
    before = server.requests
    results = evaluate_many(qa_items(20), judge=make_judge(server, JudgeCache(cache_dir)),
                            benchmarks=False)
    assert server.requests - before == 20 - cached
    assert all(r.metric("evidence_backed_reasoning").value == 0.5 for r in results)
    assert len(entry_files(cache_dir)) == 20


def run_workers(server: Any, cache_dir: Path, count: int, concurrency: int,
                starts: list[int], *budget: str) -> list[dict[str, Any]]:
    procs = [subprocess.Popen([sys.executable, str(WORKER), server.base_url, str(cache_dir),
                               str(count), str(concurrency), str(start), *budget],
                              stdout=subprocess.PIPE, text=True) for start in starts]
    reports = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        reports.append(json.loads(out.splitlines()[-1]))
    return reports


def test_two_processes_send_each_unique_request_once(fake: Any, cache_dir: Path) -> None:
    # Two workers with overlapping shares (cases 0-23 and 12-35) and one cache directory.
    server = fake(latency=0.04)
    reports = run_workers(server, cache_dir, 24, 3, [0, 12])
    assert server.requests == server.unique_requests == 36
    assert [r["verdicts"] for r in reports] == [24, 24]
    assert all(r["flagged"] == 0 for r in reports)
    usage = [r["usage"] for r in reports]
    assert sum(u["requests"] for u in usage) == 36
    assert sum(u["cache_hits"] for u in usage) == 12
    # The concurrency limit holds for both processes together, and is reached.
    assert server.peak_in_flight == 3
    assert SECRET not in tree_text(cache_dir)


def test_the_spend_ledger_reserves_within_the_limit_and_settles(tmp_path: Path) -> None:
    async def main() -> None:
        ledger = SpendLedger(tmp_path / "run.log")
        other = SpendLedger(tmp_path / "run.log")  # another process of the run
        first = await ledger.reserve(0.4, 1.0, stale_after=60)
        second = await other.reserve(0.4, 1.0, stale_after=60)
        assert isinstance(first, str) and isinstance(second, str) and first != second
        # 0.8 held: a third 0.4 fits only if a reservation comes back unused.
        assert await ledger.reserve(0.4, 1.0, stale_after=60) == "wait"
        # Held longer than a live holder would: spent.
        assert await ledger.reserve(0.4, 1.0, stale_after=0.0) is None
        ledger.settle(first, 0.1)
        assert other.total() == pytest.approx(0.1)
        third = await other.reserve(0.4, 1.0, stale_after=60)
        assert isinstance(third, str)
        other.settle(second, 0.3)
        other.settle(third, 0.2)
        assert ledger.total() == pytest.approx(0.6)
        # 0.6 spent: 0.5 can never fit, whatever is settled later.
        assert await ledger.reserve(0.5, 1.0, stale_after=60) is None
        with (tmp_path / "run.log").open("a") as handle:
            handle.write("S x 0.1")  # a record cut short: "S x 0.12 ;" never finished
        final = await ledger.reserve(0.4, 1.0, stale_after=60)
        assert isinstance(final, str)
        # The next record starts on a line of its own, so only the torn one is lost.
        ledger.settle(final, 0.05)
        assert other.total() == pytest.approx(0.65)
        ledger.remove()
        assert list(tmp_path.iterdir()) == []

    asyncio.run(main())


def test_budget_is_shared_by_the_processes_of_a_run(fake: Any, cache_dir: Path) -> None:
    from pytest_callqa.engine.pricing import PriceTable

    server = fake()
    # Free input, $1000 per million output tokens: each call reserves exactly $0.462 (the
    # 462-token bound of its reply schema, worked out in test_formats), and a fake verdict
    # of 55 tokens costs $0.055.
    prices = PriceTable({"gpt-4o-mini": (0.0, 1000.0)})
    budget = 0.6
    first = make_judge(server, JudgeCache(cache_dir), concurrency=1, budget_usd=budget,
                       prices=prices, run_id="run-1")
    second = make_judge(server, JudgeCache(cache_dir), concurrency=1, budget_usd=budget,
                        prices=prices, run_id="run-1")
    evaluate_many(qa_items(2), judge=first, benchmarks=False)
    spent_first = first.usage_summary()["spent_usd"]
    assert server.requests == 2 and spent_first == pytest.approx(0.110)
    results = evaluate_many(qa_items(4, start=10), judge=second, benchmarks=False)
    # The second judge (another worker of the same run) sees the first one's spend: one
    # more call fits (0.110 + 0.462 <= 0.6), then the worst case of the next one would pass
    # the budget (0.165 + 0.462 > 0.6).
    assert server.requests == 3
    assert sum(1 for r in results if not r.metrics["evidence_backed_reasoning"].scored) == 3
    assert second.runner.budget.spent() <= budget


def test_two_processes_sharing_a_ledger_never_pass_the_budget(fake: Any,
                                                             cache_dir: Path) -> None:
    # Two workers of one run, cache off, 8 slots each in their own process but one shared
    # limit of 8 and one budget. At $1 per million tokens a call reserves about $0.006 and
    # costs about $0.001.
    server = fake(latency=0.05)
    budget = 0.02
    reports = run_workers(server, cache_dir, 16, 8, [0, 100], str(budget), "run-2")
    usage = [r["usage"] for r in reports]
    spent = sum(u["spent_usd"] for u in usage)
    assert spent <= budget
    ledger = SpendLedger(cache_dir / "spend" / "run-2.log")
    assert ledger.total() == pytest.approx(spent) and ledger.total() <= budget
    # No more in flight at once than the budget covers at worst, across both processes.
    assert server.peak_in_flight <= 3
    assert sum(u["requests"] for u in usage) == server.requests
    assert 8 <= server.requests < 32
    assert sum(u["not_scored_budget"] for u in usage) == 32 - server.requests
    assert not entry_files(cache_dir)


def test_a_request_waits_for_reservations_in_flight_but_not_for_a_dead_holder(
    tmp_path: Path
) -> None:
    from pytest_callqa.engine.llm.budget import Budget

    async def main() -> None:
        local = Budget(1.0, None, hold_s=5.0, grace_s=0.0)
        first = await local.reserve(0.6)
        assert first is not None
        waiting = asyncio.create_task(local.reserve(0.6))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # 0.6 + 0.6 > 1.0 while the first is in flight
        local.settle(first, 0.1)
        assert await asyncio.wait_for(waiting, 1.0) is not None
        assert local.spent() == pytest.approx(0.1)
        # A process that died holding a reservation never settles it: after the hold time
        # it counts as spent, and the request is refused instead of waiting for ever.
        ledger_path = tmp_path / "run.log"
        ledger_path.write_text("\nR 999999-dead-1 0.9 ;\n")
        shared = Budget(1.0, SpendLedger(ledger_path), hold_s=0.05, grace_s=0.0)
        started = time.monotonic()
        assert await shared.reserve(0.2) is None
        assert 0.05 <= time.monotonic() - started < 2.0
        # The refusal says where the budget went: nothing settled, 0.9 never settled.
        assert shared.refusal(0.2) == (
            "budget of $1 exhausted ($0.0000 spent, $0.9000 held by requests that never "
            "settled; this request could cost up to $0.2000); it was not sent")
        assert await shared.reserve(0.1) is not None  # what is left still fits

    asyncio.run(main())


@pytest.mark.parametrize("shared", [False, True], ids=["in-process", "ledger"])
def test_a_waiting_request_does_not_count_fresh_reservations_as_spent(
    tmp_path: Path, shared: bool
) -> None:
    # A request that had waited its patience counted every reservation then held as spent,
    # those live calls took while it waited too: it was refused as "exhausted" with the
    # budget a fifth spent, and the calls after it were sent.
    from pytest_callqa.engine.llm.budget import Budget

    async def main() -> None:
        ledger = SpendLedger(tmp_path / "run.log") if shared else None
        budget = Budget(1.0, ledger, hold_s=0.3, grace_s=0.0)
        first = await budget.reserve(0.5)
        assert first is not None
        waiting = asyncio.create_task(budget.reserve(0.6))
        await asyncio.sleep(0.25)
        # The first settles and another call takes its place before the waiter looks.
        budget.settle(first, 0.0)
        second = await budget.reserve(0.5)
        assert second is not None
        await asyncio.sleep(0.2)  # past the waiter's patience, not the second's hold time
        assert not waiting.done()
        budget.settle(second, 0.0)
        assert await asyncio.wait_for(waiting, 2.0) is not None

    asyncio.run(main())


def test_a_reply_cut_at_a_bound_is_not_cached(
    fake: Any, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Judge and generation calls carry their own bound; a caller's request that sets none
    # gets one added by a budgeted runner. A reply cut at either is no whole answer.
    from pytest_callqa.engine.llm import transport
    from pytest_callqa.engine.llm.endpoint import Endpoint
    from pytest_callqa.engine.llm.transport import ChatRequest
    from pytest_callqa.engine.pricing import PriceTable

    read = transport.read_completion

    def cut_short(completion: Any) -> Any:
        reply = read(completion)
        reply.finish_reason = "length"
        return reply

    monkeypatch.setattr(transport, "read_completion", cut_short)
    server = fake()
    endpoint = Endpoint("gpt-4o-mini", server.base_url, "sk-test")
    request = ChatRequest(messages=[{"role": "user", "content": "Say hi in JSON."}],
                          kind="judge")
    budgeted = {"budget_usd": 100.0, "prices": PriceTable({"gpt-4o-mini": (1.0, 1.0)})}
    for _ in range(2):
        runner = make_runner(JudgeCache(cache_dir), **budgeted)
        runner.run_sync(lambda runner=runner: runner.call(endpoint, request))
    # The key leaves the added bound out, so a reply it cut must not stand for a whole one.
    assert server.requests == 2 and not entry_files(cache_dir)
    assert server.bodies[0]["max_tokens"] == 2048
    # Without a budget nothing is added; a reply cut all the same is not kept either, and
    # one that ended by itself is.
    runner = make_runner(JudgeCache(cache_dir))
    runner.run_sync(lambda: runner.call(endpoint, request))
    assert server.requests == 3 and not entry_files(cache_dir)
    assert "max_tokens" not in server.bodies[2]
    monkeypatch.setattr(transport, "read_completion", read)
    runner = make_runner(JudgeCache(cache_dir))
    runner.run_sync(lambda: runner.call(endpoint, request))
    assert server.requests == 4 and len(entry_files(cache_dir)) == 1


def test_slots_are_released_when_a_holder_is_cancelled(tmp_path: Path) -> None:
    from pytest_callqa.engine.llm.cache import FileSlots

    async def main() -> list[int]:
        slots = FileSlots(tmp_path, 1)
        first = await slots.acquire()
        waiter = asyncio.create_task(slots.acquire())
        await asyncio.sleep(0.01)
        waiter.cancel()
        slots.release(first)
        again = await asyncio.wait_for(slots.acquire(), 1.0)
        await slots.close()
        return [first, again]

    assert asyncio.run(main()) == [0, 0]


def test_an_unwritable_directory_falls_back_to_per_process_limits(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shared read-only cache (ro mode on a read-only mount): no lock files can be made.
    # Simulated, since the permission bits do not stop a root user.
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    cache = JudgeCache(cache_dir, "ro")
    assert cache.slots(4) is None and cache.rate_window(10, 60) is None
    assert cache.ledger_path("run") is None and cache.get("ab" * 32) is None
    # The first folder found so is named, so a run can say why limits are per process.
    assert cache.stats.lock_error == f"{cache_dir / 'slots'} is not writable"


def test_coordination_files_get_the_gitignore_too(cache_dir: Path) -> None:
    slots = JudgeCache(cache_dir, "off").slots(2)
    assert slots is not None
    asyncio.run(slots.close())
    assert (cache_dir / ".gitignore").read_text(encoding="utf-8") == (
        "# created by pytest-callqa\n*\n")
    assert sorted(p.name for p in (cache_dir / "slots").iterdir()) == ["0.lock", "1.lock"]


def test_a_whole_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    from pytest_callqa.engine.llm.cache import write_whole

    target = tmp_path / "log.json"
    target.write_text("old", encoding="utf-8")
    write_whole(target, '["é", 1]', prefix=".log.")
    assert target.read_bytes() == '["é", 1]'.encode()
    assert [p.name for p in tmp_path.iterdir()] == ["log.json"]


def test_a_failed_whole_write_keeps_the_old_file_and_raises_its_own_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_callqa.engine.llm import cache as cache_module

    target = tmp_path / "log.json"
    target.write_text("old", encoding="utf-8")
    removed = []
    unlink = os.unlink

    def full_disk(src: str, dst: object) -> None:
        raise OSError(28, "No space left on device")

    def gone_already(path: str) -> None:
        removed.append(path)
        unlink(path)
        # The temporary file is gone, whatever the removal says: its error is not the
        # write's, and must not hide it.
        raise OSError(2, "No such file or directory")

    monkeypatch.setattr(cache_module.os, "replace", full_disk)
    monkeypatch.setattr(cache_module.os, "unlink", gone_already)
    with pytest.raises(OSError, match="No space left"):
        cache_module.write_whole(target, "new", prefix=".log.")
    assert target.read_text(encoding="utf-8") == "old"
    assert len(removed) == 1 and [p.name for p in tmp_path.iterdir()] == ["log.json"]


def test_a_runs_exchange_is_a_cache_of_that_run_alone(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "c", "off")
    exchange = cache.run_exchange("gw/run:1")
    assert exchange is not None
    assert (exchange.directory, exchange.mode) == (tmp_path / "c" / "runs" / "gw_run_1", "rw")
    assert JudgeCache(None, "off").run_exchange("run") is None
    key = content_key({"x": 1})
    assert exchange.put(key, {"content": "hi"}) is True
    assert cache.get(key) is None  # the cache keeps nothing of it
    # A run's own is removed at its end; another's, and a cache without a folder, are not.
    other = cache.run_exchange("run-2")
    assert other is not None and other.put(key, {"content": "hi"}) is True
    cache.end_exchange("gw/run:1")
    JudgeCache(None, "off").end_exchange("run-2")
    cache.end_exchange("never-made")  # a run whose workers called nothing
    assert sorted(p.name for p in (tmp_path / "c" / "runs").iterdir()) == ["run-2"]


def test_a_refused_judge_is_kept_for_the_runs_other_processes_alone(tmp_path: Path) -> None:
    from pytest_callqa.engine.llm.kept import refusal, refuse

    cache = JudgeCache(tmp_path / "c", "rw")
    exchange, other_run = cache.run_exchange("run-1"), cache.run_exchange("run-2")
    assert exchange is not None and other_run is not None
    assert refusal(exchange) is None
    refuse(exchange, "gpt-4o-mini at http://127.0.0.1:9/v1: HTTP 401: bad key <redacted>")
    assert refusal(exchange) == "gpt-4o-mini at http://127.0.0.1:9/v1: HTTP 401: bad key " \
                                "<redacted>"
    # Another run asks again; the cache itself keeps nothing of it.
    assert refusal(other_run) is None
    assert refusal(cache) is None
    # An entry not so shaped (another version's, a hand edit) is no refusal.
    for found in ({"message": 401}, {"reason": "x"}):
        exchange.put("run-only-judge-refused", found)
        assert refusal(exchange) is None


def test_an_exchange_a_killed_run_left_is_swept_after_a_day(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path, "off")
    for run_id in ("old", "recent"):
        exchange = cache.run_exchange(run_id)
        assert exchange is not None and exchange.put(content_key({}), {"content": "x"})
    day = 86_400
    os.utime(tmp_path / "runs" / "old", (time.time() - day - 60,) * 2)
    os.utime(tmp_path / "runs" / "recent", (time.time() - day + 60,) * 2)
    # An entry gone between the listing and its age (another run sweeping): no error.
    (tmp_path / "runs" / "gone").symlink_to(tmp_path / "nowhere")
    assert cache.run_exchange("new") is not None
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["gone", "recent"]


@pytest.mark.parametrize("mode", ["off", "ro", "rw"])
def test_processes_of_a_run_hand_each_other_replies_with_any_cache_mode(
        fake: Any, cache_dir: Path, mode: str) -> None:
    # Two runners standing for two xdist workers of one run: the second finds the first's
    # reply in the run's exchange (or, with rw, in the cache), and sends nothing.
    server = fake()
    for _ in range(2):
        cache = JudgeCache(cache_dir, mode)
        judge = make_judge(server, cache, runner=make_runner(
            cache, exchange=cache.run_exchange("run-1")))
        verdicts = judge.judge(requests_for(2))
        assert [v.score for v in verdicts] == [0.5, 0.5]
    assert server.requests == 2
    kept = sorted(p.name for p in cache_dir.glob("??/*.json"))
    assert len(kept) == (2 if mode == "rw" else 0)
    exchanged = list((cache_dir / "runs" / "run-1").glob("??/*.json"))
    assert len(exchanged) == (0 if mode == "rw" else 2)

