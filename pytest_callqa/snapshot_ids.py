"""Tests whose ``callqa_snapshot`` files would be one file.

syrupy names a parametrized test's snapshot file after its id, dropping the characters a
file name may not hold (``\\ / ? * : | " < >`` and control characters): the tests of cases
``qa:refund`` and ``qarefund``, or of models ``sub/m`` and ``subm``, would share one file,
and each fail against the other's verdict (or, updated, pass against its own by turns).
Found at collection, from the ids alone — the same in every xdist worker — so such a test
errors, naming the other, rather than comparing against the wrong snapshot.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable

import pytest

SNAPSHOT_FIXTURE = "callqa_snapshot"
# Per test: the other tests whose snapshot file it would share.
SHARED_WITH_KEY = pytest.StashKey[list[str]]()
_NOT_IN_FILE_NAMES = frozenset('\\/?*:|"<>')


def _file_stem(name: str) -> str:
    # syrupy's own rule (SingleFileSnapshotExtension): those characters and every character
    # of a Unicode "C" category are left out.
    return "".join(c for c in name if c not in _NOT_IN_FILE_NAMES
                   and not unicodedata.category(c).startswith("C"))


def mark_shared_snapshot_files(items: Iterable[pytest.Item]) -> None:
    """Stash on each test that takes ``callqa_snapshot`` the tests (ids) whose snapshot file
    would be its own; nothing on the others."""
    by_file: dict[tuple[str, str], list[pytest.Item]] = defaultdict(list)
    for item in items:
        if SNAPSHOT_FIXTURE in getattr(item, "fixturenames", ()):
            # The file's directory is the test module's (and class's, if any).
            where = item.nodeid[:-len(item.name)]
            by_file[(where, _file_stem(item.name))].append(item)
    for sharing in by_file.values():
        if len(sharing) > 1:
            for item in sharing:
                item.stash[SHARED_WITH_KEY] = [o.nodeid for o in sharing if o is not item]
