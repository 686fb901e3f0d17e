"""Which golden cases a test gets and which tests a shard keeps: the ``callqa`` marker's
filter (checked, with the collection error naming the test) and ``--callqa-shard`` selection
by (model, case) pair."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from .repeats import case_marker, marker_runs
from .run.shard import in_shard

if TYPE_CHECKING:
    from .engine.registry import Registry

CASE_MARKER = "callqa"
CASE_MARKER_KEYS = ("task", "tags", "runs")
CASE_FIXTURE = "callqa_case"
MODEL_FIXTURE = "callqa_model"
# Set on each test a shard hands to the other shards: that deselection is the split, not a
# narrowing of the run (pytest_host.Deselections leaves it out).
OTHER_SHARD_KEY = pytest.StashKey[bool]()
# The key of an xdist worker's ``workeroutput`` that says whether the split left its shard no
# test.
SPLIT_EMPTIED_OUTPUT_KEY = "callqa_split_emptied"


def marker_matches(metafunc: pytest.Metafunc) -> str:
    """What a test without a golden case asked for, for its skip reason: `` matches
    callqa(task='qa')``, or `` was loaded`` without a marker."""
    marker = case_marker(metafunc.definition)
    if marker is None:
        return " was loaded"
    return f" matches {CASE_MARKER}({', '.join(f'{k}={v!r}' for k, v in marker.kwargs.items())})"


def marker_filter(metafunc: pytest.Metafunc, registry: Registry) -> tuple[list[str], list[str]]:
    """The tasks and tags of the test's ``callqa`` markers (empty lists: no filter), each
    keyword from the closest marker that sets it (:func:`~.repeats.case_marker`)."""
    marker = case_marker(metafunc.definition)
    if marker is None:
        return [], []
    where = f"@pytest.mark.{CASE_MARKER} on {metafunc.definition.nodeid}"
    problem = marker.conflict
    unknown = sorted(set(marker.kwargs) - set(CASE_MARKER_KEYS))
    if problem is None and marker.args:
        problem = f"use keywords, e.g. {CASE_MARKER}(task='qa', tags=['billing'])"
    elif problem is None and unknown:
        problem = (f"unknown keyword(s) {', '.join(unknown)}; "
                   f"known: {', '.join(CASE_MARKER_KEYS)}")

    def names(key: str) -> list[str]:
        nonlocal problem
        value = marker.kwargs.get(key)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, (list, tuple, set, frozenset)):
            problem = problem or (f"{key} must be a name or a list of names, got "
                                  f"{type(value).__name__} {value!r}")
            return []
        return [str(v) for v in value]

    tasks, tags = names("task"), names("tags")
    bad = [t for t in tasks if t not in registry.tasks]
    if bad and problem is None:
        problem = (f"unknown task(s) {', '.join(map(repr, bad))}; "
                   f"known: {', '.join(registry.tasks)}")
    if "runs" in marker.kwargs and problem is None:
        problem = marker_runs(marker.kwargs["runs"])
    if problem is not None:
        raise pytest.Collector.CollectError(f"{where}: {problem}")
    return tasks, tags


class ShardSelection:
    """A plugin (with ``--callqa-shard``) that deselects the other shards' tests after every
    other plugin has seen the whole collection: syrupy, told of them only as deselected,
    keeps their snapshots (it reported them unused, failing every shard, and
    ``--snapshot-update`` deleted them).

    It also tells whether the shard has no test because of the split — every selected test
    went to another shard, an empty shard that passes — rather than because the selection
    (``-k``, ``-m``, ``--deselect``, node ids) left none, which is pytest's "no tests ran".
    Each process that collects decides; under xdist the controller, which collects nothing,
    hears it from its workers (they collect and split the same tests)."""

    def __init__(self, shard: tuple[int, int]) -> None:
        self.shard = shard
        self.others: list[pytest.Item] = []
        self.split_emptied = False

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Last, after ``-k``, ``-m`` and ``--deselect`` have narrowed the tests."""
        self.others = deselect_other_shards(config, items, self.shard)
        self.split_emptied = bool(self.others) and not items

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Told of the other shards' tests only as deselected, syrupy took the run for a
        # partial one and reported no snapshot unused: an obsolete snapshot (of a case or
        # model since removed) failed an unsharded run and passed every shard. Counted as
        # selected and skipped, they keep their snapshots and the run reads as whole.
        syrupy = getattr(session.config, "_syrupy", None)
        select, ran_item = (getattr(syrupy, "select_items", None),
                            getattr(syrupy, "ran_item", None))
        if self.others and callable(select) and callable(ran_item):
            select(self.others)
            for item in self.others:
                ran_item(item.nodeid, "skipped")

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fires once per process, after the last test: a worker hands on its finding."""
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[SPLIT_EMPTIED_OUTPUT_KEY] = self.split_emptied

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """Fires on the xdist controller as each worker ends (one that crashed hands on
        nothing)."""
        output = getattr(node, "workeroutput", None) or {}
        self.split_emptied = self.split_emptied or output.get(SPLIT_EMPTIED_OUTPUT_KEY) is True


def deselect_other_shards(config: pytest.Config, items: list[pytest.Item],
                          shard: tuple[int, int] | None) -> list[pytest.Item]:
    """With ``--callqa-shard I/N``, keep the evaluation tests of this shard's (model, case)
    pairs; a test without a pair runs in shard 1 only. Returns the tests deselected."""
    if shard is None:
        return []
    index, count = shard
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        model, case_id = pair_of(item)
        if isinstance(model, str) and isinstance(case_id, str):
            ours = in_shard(case_id, index, count)
        else:
            ours = index == 1
        (keep if ours else drop).append(item)
    if drop:
        for item in drop:
            item.stash[OTHER_SHARD_KEY] = True
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    return drop


def item_pair(item: pytest.Item) -> tuple[Any, Any]:
    """The (model, golden case) an evaluation test is parametrised with (None where not)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return params.get(MODEL_FIXTURE), params.get(CASE_FIXTURE)


def pair_of(item: pytest.Item) -> tuple[Any, Any]:
    """The (model, case id) an evaluation test is parametrised with (None where not)."""
    model, case = item_pair(item)
    return model, getattr(case, "id", None)

