"""The golden cases of the run (bad files kept as errors) and the models it evaluates."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..outputs import discover_models
from .settings import CallqaUsageError, Settings, display_path, live_entry

if TYPE_CHECKING:
    from ..engine.core.cases import GoldenCase
    from ..engine.llm.endpoint import ModelSpec
    from ..engine.loading import CaseFileError
    from .host import Host


@dataclass
class CaseFiles:
    cases: list[GoldenCase]
    errors: list[CaseFileError]


class Catalog:
    """Loaded on first use: a run that evaluates nothing reads no case file."""

    def __init__(self, settings: Settings, host: Host) -> None:
        self.settings = settings
        self.host = host
        self._files: CaseFiles | None = None
        self._specs: dict[str, ModelSpec | None] | None = None

    def files(self) -> CaseFiles:
        """Every golden case below the cases directory; bad files are kept as errors."""
        if self._files is None:
            self._files = self._load()
        return self._files

    def _load(self) -> CaseFiles:
        # The engine (pydantic, the task families) loads with the first golden case.
        from ..engine.loading import scan_cases

        root = self.settings.cases
        if root is None:
            raise CallqaUsageError(
                "callqa: no golden cases configured: pass --callqa-cases DIR or set "
                "callqa_cases in [tool.pytest.ini_options]"
            )
        if not root.exists():
            raise CallqaUsageError(f"callqa: the golden cases directory {root} does not exist")
        cases, errors = scan_cases(
            root, show=lambda path: display_path(path, self.host.rootpath))
        return CaseFiles(cases=cases, errors=errors)

    def each_case(self) -> Iterator[GoldenCase]:
        """Every good case, as :meth:`files` has them; read one file at a time and kept by
        nobody when they are not loaded yet (the xdist controller, which collects nothing,
        reads the cases only for the report: 30,000 cases must not all sit in memory)."""
        if self._files is not None:
            yield from self._files.cases
            return
        # The engine's loader loads with the first golden case.
        from ..engine.loading import CaseFileError, iter_case_files, load_case_file

        if self.settings.cases is None or not self.settings.cases.exists():
            return
        owners: set[str] = set()
        for file in iter_case_files(self.settings.cases):
            try:
                loaded = load_case_file(file)
            except CaseFileError:
                continue
            # A file reusing an earlier file's case id is bad as a whole (scan_cases).
            if any(c.id in owners for c in loaded):
                continue
            owners.update(c.id for c in loaded)
            yield from loaded

    def select(self, tasks: Sequence[str] = (), tags: Sequence[str] = ()) -> list[GoldenCase]:
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

    def models(self) -> list[str]:
        return list(self.model_specs())

    def live_spec(self, model: str) -> ModelSpec | None:
        return self.model_specs().get(model) if self.settings.models else None

    def live_models(self) -> dict[str, ModelSpec]:
        """The models generated live, by column name."""
        if not self.settings.models:
            return {}
        return {name: spec for name, spec in self.model_specs().items() if spec is not None}
