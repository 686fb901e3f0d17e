"""The golden cases of the run (bad files kept as errors) and the models it evaluates."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine.core.unicode_text import unshowable
from ..outputs import OUTPUT_SUFFIX, USAGE_FILE, discover_models
from .settings import CallqaUsageError, Settings, display_path, live_entry

if TYPE_CHECKING:
    from ..engine.core.cases import GoldenCase
    from ..engine.llm.endpoint import ModelSpec
    from ..engine.loading import CaseFileError
    from ..engine.registry import Registry
    from .host import Host

# Case files whose cases are kept once read again: the tests of a case's models and runs,
# and a batch of pairs, read the same few files one after the other.
RECENT_FILES = 16
# Up to this many cases, the bodies collection read are kept (~35 MB for the example's
# cases) and no test reads a file again; a larger catalogue keeps references only.
KEPT_CASES = 2000


@dataclass(frozen=True, slots=True)
class CaseRef:
    """A golden case as collection knows it: what selects and names its tests, and the file
    its body is read from when a test or a batch needs it. Every process holding the tests
    keeps one per case for the whole run, so the body (the transcript, the truth, the
    config: ~17 KB of objects for the example's cases, 34,000 cases at 100,000 outputs) is
    not kept with it."""

    id: str
    task: str
    tags: tuple[str, ...]
    path: str
    # The file's (modification time in ns, size) when collection checked it: unchanged, its
    # cases are built again without the families' checks.
    stamp: tuple[int, int]


@dataclass
class CaseFiles:
    cases: list[CaseRef]
    errors: list[CaseFileError]


class Catalog:
    """Loaded on first use: a run that evaluates nothing reads no case file."""

    def __init__(self, settings: Settings, host: Host) -> None:
        self.settings = settings
        self.host = host
        self._files: CaseFiles | None = None
        # The xdist controller may read the files in a thread of its own
        # (CallqaSession.read_cases_ahead) while its main thread reaches the end of the run:
        # the main thread then waits for that reading rather than scanning the files again.
        self._loading = threading.Lock()
        self._recent: dict[str, dict[str, GoldenCase]] = {}
        self._kept: dict[str, GoldenCase] = {}
        self._positions: dict[str, int] | None = None
        self._specs: dict[str, ModelSpec | None] | None = None
        self._recorded_checked = False
        # What a worker handed the xdist controller (take), which reads no case file for it.
        self._handed: dict[str, Any] | None = None
        # The metrics a case's human labels may name, the project's own among them (the
        # session gives it once its services exist); None: the built-in ones.
        self.labels: Callable[[], Registry] | None = None

    @property
    def loaded(self) -> bool:
        """Whether the files have been read (by collection, or read ahead)."""
        return self._files is not None

    def files(self) -> CaseFiles:
        """Every golden case below the cases directory; bad files are kept as errors."""
        if self._files is None:
            with self._loading:
                if self._files is None:
                    self._files = self._load()
        return self._files

    def digest(self) -> str | None:
        """A fingerprint of the catalogue's cases (their tasks and ids, and its bad files'
        paths): the shards of one run read the same catalogue, and the merge refuses shards
        that did not — a report left from an earlier run lacks the cases added since, and
        their pairs would be missing from a scorecard that said nothing of them. None when
        no test read the catalogue (tests that take models alone)."""
        if self._files is None:
            return self._handed.get("digest") if self._handed else None
        listed = sorted(f"{ref.task}\t{ref.id}" for ref in self._files.cases)
        listed += sorted(f"bad\t{bad['path']}" for bad in self.bad_files())
        found = hashlib.sha256("\n".join(listed).encode("utf-8")).hexdigest()[:16]
        return f"{len(self._files.cases)} cases, {found}"

    def bad_files(self) -> list[dict[str, Any]]:
        """The catalogue's case files that could not be read: path (as shown) and problems;
        none when no test read the catalogue."""
        if self._files is None:
            return list(self._handed.get("bad_files") or []) if self._handed else []
        return [{"path": display_path(error.path, self.host.rootpath),
                 "problems": list(error.problems)} for error in self._files.errors]

    def listed(self) -> list[list[str]] | None:
        """The task and id of every good case of the catalogue, sorted: the baseline gate
        tells a case the run did not select (still listed) from one deleted since (not
        listed). None when no test read the catalogue."""
        if self._files is None:
            return self._handed.get("cases") if self._handed else None
        return sorted([ref.task, ref.id] for ref in self._files.cases)

    def handed_over(self) -> dict[str, Any] | None:
        """What an xdist worker that read the catalogue hands its controller (:meth:`take`),
        which reads no case file for it: the fingerprint, the bad files and the cases."""
        return None if self._files is None else {"digest": self.digest(),
                                                 "bad_files": self.bad_files(),
                                                 "cases": self.listed()}

    def take(self, handed: Any) -> None:
        """Keep what a worker handed over (:meth:`handed_over`), when it is so shaped."""
        if isinstance(handed, dict) and isinstance(handed.get("digest"), str) \
                and isinstance(handed.get("bad_files"), list) \
                and isinstance(handed.get("cases"), list):
            self._handed = handed

    def position(self, case_id: str) -> int:
        """Where a collected case stands in the catalogue's order (its files sorted, each
        file's cases as written): every process that collected the same cases numbers them
        alike, so the xdist controller, which collects nothing, can put the cases its
        workers sent in order without reading a file."""
        if self._positions is None:
            self._positions = {ref.id: i for i, ref in enumerate(self.files().cases)}
        return self._positions[case_id]

    def _load(self) -> CaseFiles:
        root = self.settings.cases
        if root is None:
            raise CallqaUsageError(
                "callqa: no golden cases configured: pass --callqa-cases DIR or set "
                "callqa_cases in [tool.pytest.ini_options]"
            )
        if not root.exists():
            raise CallqaUsageError(f"callqa: the golden cases directory {root} does not exist")
        found = CaseFiles(cases=[], errors=[])
        kept: dict[str, GoldenCase] | None = {}
        for loaded in self._scan(root):
            if isinstance(loaded, list):
                path = loaded[0].path or ""
                stamp = _stamp(path)
                found.cases.extend(CaseRef(case.id, case.task, tuple(case.tags), path, stamp)
                                   for case in loaded)
                if kept is not None:
                    kept.update((case.id, case) for case in loaded)
                    kept = kept if len(kept) <= KEPT_CASES else None
            else:
                found.errors.append(loaded)
        if not (found.cases or found.errors):
            # Every evaluation test was one skip ("no golden case") and the run passed having
            # evaluated nothing: the wrong directory, or cases saved as .jsonl or .yaml.txt.
            from ..engine.loading import CASE_SUFFIXES  # loaded by the scan already

            raise CallqaUsageError(
                f"callqa: no golden case file under {display_path(root, self.host.rootpath)} "
                f"(a case file's name ends in {', '.join(CASE_SUFFIXES)}): "
                f"{_other_files(root)}")
        self._kept = kept or {}
        return found

    def _scan(self, root: Path) -> Iterator[list[GoldenCase] | CaseFileError]:
        # The engine (pydantic, the task families) loads with the first golden case.
        from ..engine.loading import scan_case_files

        yield from scan_case_files(
            root, show=lambda path: display_path(path, self.host.rootpath),
            registry=self.labels() if self.labels is not None else None)

    def each_case(self) -> Iterator[GoldenCase]:
        """Every good case, as :meth:`files` has them, one at a time and kept by nobody once
        given (the report's golden cases, the calibration: 34,000 cases must not all sit in
        memory). After collection, or once the xdist controller has read them ahead
        (:meth:`files`), they come from :meth:`case` (a case whose file changed since is left
        out); otherwise, as in a controller that has not, the files are scanned."""
        with self._loading:
            files = self._files
        if files is not None:
            for ref in files.cases:
                try:
                    yield self.case(ref)
                except CallqaUsageError:
                    continue
            return
        root = self.settings.cases
        if root is None or not root.exists():
            return
        for loaded in self._scan(root):
            if isinstance(loaded, list):
                yield from loaded

    def case(self, ref: CaseRef) -> GoldenCase:
        """The body of a collected case: kept since collection in a small catalogue
        (:data:`KEPT_CASES`), otherwise read again from its file (the last
        :data:`RECENT_FILES` files read are kept)."""
        kept = self._kept.get(ref.id)
        if kept is not None:
            return kept
        cases = self._recent.pop(ref.path, None)
        if cases is None:
            # Loaded by the collection's scan already; named here for reading a file again.
            from ..engine.loading import CaseFileError, load_case_file, reread_case_file

            try:
                unchanged = _stamp(ref.path) == ref.stamp
                cases = {case.id: case for case in (
                    reread_case_file(ref.path) if unchanged else load_case_file(
                        ref.path, self.labels() if self.labels is not None else None))}
            except CaseFileError as exc:
                raise CallqaUsageError(f"callqa: the golden case file changed during the "
                                       f"run: {exc}") from None
            if len(self._recent) >= RECENT_FILES:
                del self._recent[next(iter(self._recent))]
        # Most recently used last: the oldest is the first dropped.
        self._recent[ref.path] = cases
        found = cases.get(ref.id)
        if found is None or found.task != ref.task:
            raise CallqaUsageError(f"callqa: golden case {ref.id!r} ({ref.task}) is no longer "
                                   f"in {ref.path}: the file changed during the run")
        return found

    def select(self, tasks: Sequence[str] = (), tags: Sequence[str] = ()) -> list[CaseRef]:
        """Cases of one of ``tasks`` (all when empty) carrying every tag in ``tags``."""
        return [
            c for c in self.files().cases
            if (not tasks or c.task in tasks) and all(t in c.tags for t in tags)
        ]

    def model_specs(self) -> dict[str, ModelSpec | None]:
        """Column name → live model (None: outputs are read from recorded files)."""
        if self._specs is None:
            self._specs = self._read_models()
        return self._specs

    def _read_models(self) -> dict[str, ModelSpec | None]:
        specs = self._named_models()
        for name in specs:
            bad = unshowable(name)
            if bad is not None:
                # Printed as it is in the scorecard, written into JUnit property names (XML
                # cannot hold most controls) and the reports' headings.
                raise CallqaUsageError(
                    f"callqa: model name {name!r} holds a control or invisible character "
                    f"({bad!r}): the terminal and the reports would show it as it is; rename "
                    "the callqa_models entry or the outputs directory")
        return specs

    def _named_models(self) -> dict[str, ModelSpec | None]:
        specs: dict[str, ModelSpec | None] = {}
        for entry in self.settings.models:
            try:
                spec = live_entry(entry)
            except ValueError as exc:
                raise CallqaUsageError(f"callqa: callqa_models entry {entry!r}: {exc}") \
                    from None
            name = entry if spec is None else spec.name
            if name in specs:
                raise CallqaUsageError(
                    f"callqa: two callqa_models entries are named {name!r}; give one a "
                    "name of its own (name=model@base_url)")
            specs[name] = spec
        if specs:
            self._check_recorded(specs)
            return specs
        found = discover_models(self.settings.outputs) if self.settings.outputs else []
        if not found:
            where = (f"no model directory under {self.settings.outputs}"
                     if self.settings.outputs else "no --callqa-outputs directory")
            raise CallqaUsageError(
                f"callqa: no models to evaluate ({where}): pass --callqa-models a,b "
                "or set callqa_models in [tool.pytest.ini_options]"
            )
        return dict.fromkeys(found)

    def _check_recorded(self, specs: dict[str, ModelSpec | None]) -> None:
        """Refuse a named model that has no directory of recorded outputs and is not live,
        unless the project's ``pytest_callqa_generate`` may answer for it: every one of its
        tests would be skipped, and the run pass having measured nothing of it (a typo in
        its name, or in ``--callqa-outputs``)."""
        if self.host.generates_outputs:
            return
        outputs = self.settings.outputs
        absent = [name for name, spec in specs.items()
                  if spec is None and (outputs is None or not (outputs / name).is_dir())]
        if not absent:
            return
        if outputs is None:
            where = "no --callqa-outputs directory is configured"
        elif not outputs.is_dir():
            where = f"{display_path(outputs, self.host.rootpath)} is not a directory"
        else:
            found = discover_models(outputs)
            where = (f"no directory {', '.join(repr(n) for n in absent)} in "
                     f"{display_path(outputs, self.host.rootpath)}"
                     + (f"; it has {', '.join(found)}" if found else ""))
        raise CallqaUsageError(
            f"callqa: no recorded outputs of model(s) {', '.join(map(repr, absent))} ({where}), "
            "and no pytest_callqa_generate implementation: none of their tests could be "
            "evaluated. Record the outputs, point --callqa-outputs at them, make the model "
            "live (name=model@base_url) or leave it out of callqa_models")

    def check_recorded_cases(self) -> None:
        """Refuse a recorded model whose directory holds no output file at all, or files
        named after the catalogue's cases in another letter case, unless the project's
        ``pytest_callqa_generate`` may answer for it: as with no directory at all, every one
        of its tests would be skipped and the run pass having measured nothing of it.
        Checked against every case of the catalogue, not the selected ones: a model recorded
        for some families only is a choice, not a typo."""
        if self._recorded_checked:
            return
        self._recorded_checked = True
        outputs = self.settings.outputs
        ids = {ref.id for ref in self.files().cases}
        if self.host.generates_outputs or outputs is None or not ids:
            return
        empty = {}
        for name, spec in self.model_specs().items():
            if spec is None:
                problem = _none_recorded(outputs / name, ids)
                if problem is not None:
                    empty[name] = problem
        if not empty:
            return
        shown = "; ".join(f"{name!r} ({display_path(outputs / name, self.host.rootpath)}: "
                          f"{problem})" for name, problem in empty.items())
        raise CallqaUsageError(
            f"callqa: the recorded outputs of model(s) {shown} hold no golden case's output, "
            "and no pytest_callqa_generate implementation: none of their tests could be "
            f"evaluated. An output is read from <outputs>/<model>/<case_id>{OUTPUT_SUFFIX}")

    def models(self) -> list[str]:
        return list(self.model_specs())

    def live_spec(self, model: str) -> ModelSpec | None:
        return self.model_specs().get(model) if self.settings.models else None

    def live_models(self) -> dict[str, ModelSpec]:
        """The models generated live, by column name."""
        if not self.settings.models:
            return {}
        return {name: spec for name, spec in self.model_specs().items() if spec is not None}


def _other_files(root: Path) -> str:
    """What the cases directory ``root`` holds instead of case files, in a few words."""
    names = sorted(str(Path(folder, name).relative_to(root))
                   for folder, _, files in os.walk(root) for name in files)
    if not names:
        return "it holds no file"
    shown = ", ".join(repr(name) for name in names[:3])
    return f"it holds {len(names)} other file(s), e.g. {shown}"


def _none_recorded(directory: Path, ids: set[str]) -> str | None:
    """What the files of ``directory`` are, when they cannot be the outputs of the cases
    ``ids``: no output file at all, or files named after the cases in another letter case.
    None otherwise — an output of a case of ``ids`` is there, or outputs of cases the
    catalogue does not hold (it may be narrowed to some families) — and when the directory
    cannot be listed (each test then says why its output cannot be read)."""
    try:
        names = [entry.name for entry in os.scandir(directory) if entry.name != USAGE_FILE]
    except OSError:
        return None
    stems = {name[:-len(OUTPUT_SUFFIX)]: name for name in names
             if name.endswith(OUTPUT_SUFFIX)}
    if not ids.isdisjoint(stems):
        return None
    by_fold = {case_id.casefold(): case_id for case_id in ids}
    for stem, name in stems.items():
        case_id = by_fold.get(stem.casefold())
        if case_id is not None:
            if (directory / f"{case_id}{OUTPUT_SUFFIX}").is_file():
                # A file system that ignores letter case finds the output under either name.
                return None
            return (f"its file names differ from the case ids in letter case, e.g. {name!r} "
                    f"for case {case_id!r}")
    if stems:
        # Outputs of cases this run's catalogue does not hold: --callqa-cases narrowed to
        # some families, and the model was recorded for others only.
        return None
    return f"no {OUTPUT_SUFFIX} file" + (f", e.g. {min(names)!r}" if names else "")


def _stamp(path: str) -> tuple[int, int]:
    """The file's (modification time in ns, size); (-1, -1) when it cannot be read."""
    try:
        found = os.stat(path)
    except OSError:
        return (-1, -1)
    return (found.st_mtime_ns, found.st_size)
