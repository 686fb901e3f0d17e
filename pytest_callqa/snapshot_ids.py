"""What ``callqa_snapshot`` keeps track of beside syrupy: tests whose snapshot files would
be one file, and the accepted snapshots of tests the tool could not evaluate.

syrupy names a parametrized test's snapshot file after its id, dropping the characters a
file name may not hold (``\\ / ? * : | " < >`` and control characters) and cutting it to fit
a file name (255 characters with the ``.json`` suffix): the tests of cases ``qa:refund`` and
``qarefund``, of models ``sub/m`` and ``subm``, or of two long ids alike in their first 250
characters, would share one file, and each fail against the other's verdict (or, updated,
pass against its own by turns). Found at collection, from the ids alone — the same in every
xdist worker — so such a test errors, naming the other, rather than comparing against the
wrong snapshot.

A test that errors before its snapshot is compared (in its fixtures: a generation failed,
an outputs file unusable; or on a verdict the judge could not give) leaves its snapshot
unused, and ``--snapshot-update`` deletes unused snapshots of the tests that ran: a passing
failure of the tool would throw away the verdict accepted before. Such a test is told to
syrupy as skipped, whose snapshots it keeps.

A run the command line narrows — ``--callqa-*`` options or ``-o`` overrides choosing other
cases than the ini file's, or fewer models than it names or than its outputs directory
holds — never makes the other tests: their snapshots are left alone, unused or not.
"""

from __future__ import annotations

import os
import shlex
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from .ini_file import UNREADABLE, own_ini_value
from .options import (
    CASES_OPTION,
    MODELS_OPTION,
    OUTPUTS_OPTION,
    ini_base,
    ini_name,
    split_models,
)
from .outputs import discover_models
from .run.settings import Settings, model_name

SNAPSHOT_FIXTURE = "callqa_snapshot"
# Per test: the other tests whose snapshot file it would share.
SHARED_WITH_KEY = pytest.StashKey[list[str]]()
# On a test report: the test uses callqa_snapshot and the tool could not evaluate it.
KEEP_SNAPSHOT_ATTR = "callqa_keep_snapshot"
_NOT_IN_FILE_NAMES = frozenset('\\/?*:|"<>')
# A file name's 255 characters less the ".json" suffix.
_LONGEST_STEM = 255 - len(".json")


def _file_stem(name: str) -> str:
    # syrupy's own rule (SingleFileSnapshotExtension): those characters and every character
    # of a Unicode "C" category are left out, and the rest cut to fit a file name.
    return "".join(c for c in name if c not in _NOT_IN_FILE_NAMES
                   and not unicodedata.category(c).startswith("C"))[:_LONGEST_STEM]


def mark_shared_snapshot_files(items: Iterable[pytest.Item]) -> None:
    """Stash on each test that takes ``callqa_snapshot`` the tests (ids) whose snapshot file
    would be its own; nothing on the others."""
    by_file: dict[tuple[str, str], list[pytest.Item]] = defaultdict(list)
    for item in items:
        if SNAPSHOT_FIXTURE in getattr(item, "fixturenames", ()):
            # The file's directory is the test module's; a test in a class is named
            # "Class.test[id]" (syrupy's snapshot name), and the cut to fit a file name
            # counts the class's part: two long ids that differ only past it share a file.
            module, *classes, _ = item.nodeid.split("::")
            name = ".".join([*classes, item.name])
            by_file[(module, _file_stem(name))].append(item)
    for sharing in by_file.values():
        if len(sharing) > 1:
            for item in sharing:
                item.stash[SHARED_WITH_KEY] = [o.nodeid for o in sharing if o is not item]


def _overridden(config: pytest.Config, option: str) -> bool:
    """Whether a ``-o`` override sets the ini key of ``option``."""
    return any(str(entry).partition("=")[0].strip() == ini_name(option)
               for entry in config.option.override_ini or ())


def _file_value(config: pytest.Config, option: str) -> Any:
    """The ini file's own value of ``option``'s key: getini's, unless ``-o`` overrode it."""
    if _overridden(config, option):
        return own_ini_value(config, ini_name(option))
    return config.getini(ini_name(option))


def _ini_file_path(value: Any, config: pytest.Config) -> Path | None:
    return (ini_base(config) / os.path.expanduser(str(value))).resolve() if value else None


def _ini_file_models(models: Any, outputs: Path | None) -> list[str]:
    """The models the ini file configures: those it names, else its outputs' folders."""
    named = split_models(shlex.split(models) if isinstance(models, str)
                         else map(str, models or []))
    if named:
        return list(named)
    return discover_models(outputs) if outputs is not None else []


def narrowed_selection(config: pytest.Config, settings: Settings) -> bool:
    """Whether the command line narrowed the suite the ini file configures: to a folder or
    file of cases other than the ini file's, or to some of its models (those the ini file
    names, else those of its outputs directory: another directory holding fewer of them
    narrows too), by ``--callqa-*`` options or ``-o`` overrides. The same cases or models
    given again narrow nothing."""
    selection = (CASES_OPTION, OUTPUTS_OPTION, MODELS_OPTION)
    if all(config.getoption(ini_name(o)) is None and not _overridden(config, o)
           for o in selection):
        return False
    cases, outputs, models = (_file_value(config, o) for o in selection)
    if any(value is UNREADABLE for value in (cases, outputs, models)):
        # Nothing to compare the override with: taken for a narrowed run, which deletes no
        # snapshot (a run without the override finds the obsolete ones).
        return True
    suite = _ini_file_path(cases, config)
    if suite is not None and settings.cases is not None and settings.cases.resolve() != suite:
        return True
    chosen = settings.models or (discover_models(settings.outputs) if settings.outputs
                                 else ())
    chosen_names = {model_name(entry) for entry in chosen}
    return any(model_name(entry) not in chosen_names
               for entry in _ini_file_models(models, _ini_file_path(outputs, config)))


class KeepSnapshots:
    """A plugin (one per run) that tells syrupy, after it has recorded a test's phase, that a
    test the tool could not evaluate was skipped, so that its accepted snapshot stays.
    syrupy offers no public way to say so: its session's ``ran_item`` is used where it has
    one (syrupy 4.6 to 7 do), and without it syrupy's own rule applies."""

    def __init__(self, config: pytest.Config, narrowed: bool) -> None:
        self.config = config
        if narrowed:
            # The command line narrowed the run to some models or cases: the others' tests
            # are never made, so syrupy would take their accepted snapshots for unused ones
            # (and --snapshot-update delete them). Unused snapshots are left alone, as
            # syrupy's --snapshot-disable-unused does.
            config.option.disable_unused_snapshots = True

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if getattr(report, KEEP_SNAPSHOT_ATTR, False) and report.when != "teardown":
            ran_item = getattr(getattr(self.config, "_syrupy", None), "ran_item", None)
            if callable(ran_item):
                ran_item(report.nodeid, "skipped")
