"""The reply cache: atomic entries, damaged entries, killed writers, several processes."""

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
from pytest_callqa.engine.llm.cache import JudgeCache, SpendLedger, content_key

from .conftest import make_judge
from .helpers import SECRET, WORKER, qa_items, tree_text


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
    lambda text: json.dumps({"format": 1, "key": "someone-else", "value": {}}),  # wrong key
    lambda text: json.dumps([1, 2]),  # wrong shape
])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(cache_dir: Path, damage: Any) -> None:
    cache = JudgeCache(cache_dir)
    key = content_key({"b": 2})
    cache.put(key, {"content": "x"})
    path = cache.entry_path(key)
    path.write_text(damage(path.read_text()))
    assert cache.get(key) is None
    assert cache.stats.unreadable == 1
    assert cache.put(key, {"content": "y"})
    assert JudgeCache(cache_dir).get(key) == {"content": "y"}


def test_a_damaged_entry_is_judged_again(fake: Any, cache_dir: Path) -> None:
    server = fake()
    items = qa_items(3)
    evaluate_many(items, judge=make_judge(server, JudgeCache(cache_dir)), benchmarks=False)
    damaged = entry_files(cache_dir)[0]
    damaged.write_text(damaged.read_text()[:40])
    results = evaluate_many(items, judge=make_judge(server, JudgeCache(cache_dir)),
                            benchmarks=False)
    assert server.requests == 4  # 3 cold + the damaged one
    assert all(not r.metric("evidence_backed_reasoning").flagged for r in results)
    assert json.loads(damaged.read_text())["format"] == 1


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
                starts: list[int]) -> list[dict[str, Any]]:
    procs = [subprocess.Popen([sys.executable, str(WORKER), server.base_url, str(cache_dir),
                               str(count), str(concurrency), str(start)],
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


def test_the_spend_ledger_sums_whole_lines(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path / "run.log")
    ledger.add(0.25)
    ledger.add(0.5)
    with (tmp_path / "run.log").open("a") as handle:
        handle.write("0.12")  # a line a killed process never finished
    assert ledger.total() == pytest.approx(0.75)


def test_budget_is_shared_by_the_processes_of_a_run(fake: Any, cache_dir: Path) -> None:
    from pytest_callqa.engine.pricing import PriceTable

    server = fake()
    prices = PriceTable({"gpt-4o-mini": (1000.0, 1000.0)})
    first = make_judge(server, JudgeCache(cache_dir), concurrency=1, budget_usd=2.5,
                       prices=prices, run_id="run-1")
    second = make_judge(server, JudgeCache(cache_dir), concurrency=1, budget_usd=2.5,
                        prices=prices, run_id="run-1")
    evaluate_many(qa_items(2), judge=first, benchmarks=False)
    results = evaluate_many(qa_items(4, start=10), judge=second, benchmarks=False)
    # The second judge (another worker of the same run) sees the first one's spend.
    assert server.requests == 3
    assert sum(1 for r in results if not r.metric("evidence_backed_reasoning").scored) == 3


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
    assert cache.ledger("run") is None and cache.get("ab" * 32) is None


def test_coordination_files_get_the_gitignore_too(cache_dir: Path) -> None:
    slots = JudgeCache(cache_dir, "off").slots(2)
    assert slots is not None
    asyncio.run(slots.close())
    assert (cache_dir / ".gitignore").exists()
    assert sorted(p.name for p in (cache_dir / "slots").iterdir()) == ["0.lock", "1.lock"]
