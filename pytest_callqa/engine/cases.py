"""Golden cases: the human truth a model output is scored against, loaded from YAML or JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

CASE_SUFFIXES = (".yaml", ".yml", ".json")
_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
_TIME_PATTERN = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d{2}(?:\.\d+)?)$")
_LINE_PATTERN = re.compile(
    r"^\s*(?:\[(?P<start>[\d:.]+)\]\s*)?"
    r"(?:(?P<speaker>[A-Za-z][\w .'-]{0,40}?)\s*:\s+)?"
    r"(?P<text>.*\S)\s*$"
)


class CaseFileError(ValueError):
    """A golden-case file that cannot be used, with the file and the offending field."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = Path(path)
        self.problems = problems
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid golden case file {self.path}:\n{listed}")


def parse_timestamp(value: Any) -> float | None:
    """Seconds from ``"mm:ss"``, ``"hh:mm:ss"``, or a number of seconds; None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a timestamp must be 'mm:ss', 'hh:mm:ss' or seconds, not a boolean")
    if isinstance(value, (int, float)):
        if not value >= 0:
            raise ValueError(f"timestamp {value!r} must be a non-negative number of seconds")
        return float(value)
    if isinstance(value, str):
        match = _TIME_PATTERN.match(value.strip())
        if match:
            hours, minutes, seconds = match.groups()
            if float(seconds) >= 60:
                raise ValueError(f"timestamp {value!r} has {seconds} seconds")
            return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    raise ValueError(f"timestamp {value!r} is not 'mm:ss', 'hh:mm:ss' or a number of seconds")


def format_timestamp(seconds: float) -> str:
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class Turn(BaseModel):
    """One turn of a call; ``start`` is in seconds from the start of the call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    speaker: str = ""
    text: str
    start: float | None = None

    @field_validator("start", mode="before")
    @classmethod
    def _parse_start(cls, value: Any) -> float | None:
        return parse_timestamp(value)


def _turns_from_text(text: str) -> list[Turn]:
    turns = []
    for line in text.splitlines():
        match = _LINE_PATTERN.match(line)
        if not match:
            continue
        turns.append(
            Turn(
                speaker=(match.group("speaker") or "").strip(),
                text=match.group("text").strip(),
                start=parse_timestamp(match.group("start")),
            )
        )
    return turns


class GoldenCase(BaseModel):
    """A golden case as written in a case file (SPEC section 3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    task: str
    transcript: list[Turn] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    expected_outcome: Any = None
    tags: list[str] = Field(default_factory=list)
    source: str | None = None
    description: str | None = None
    path: str | None = Field(default=None, exclude=True)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not _ID_PATTERN.match(value):
            raise ValueError(
                f"id {value!r} must start with a letter or digit and use only letters, digits "
                "and . _ : - (it becomes part of test ids and file names)"
            )
        return value

    @field_validator("transcript", mode="before")
    @classmethod
    def _parse_transcript(cls, value: Any) -> Any:
        if isinstance(value, str):
            return _turns_from_text(value)
        return value

    @property
    def transcript_text(self) -> str:
        """The transcript as lines of ``[mm:ss] speaker: text`` (parts omitted when absent)."""
        lines = []
        for turn in self.transcript:
            stamp = f"[{format_timestamp(turn.start)}] " if turn.start is not None else ""
            who = f"{turn.speaker}: " if turn.speaker else ""
            lines.append(f"{stamp}{who}{turn.text}")
        return "\n".join(lines)

    @property
    def transcript_plain(self) -> str:
        return "\n".join(turn.text for turn in self.transcript)


def error_location(loc: Iterable[Any]) -> str:
    """Render a pydantic error location as a field path such as ``questions[2].score``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(top level)"


def validation_problems(error: ValidationError, prefix: str = "") -> list[str]:
    problems = []
    for item in error.errors():
        where = error_location(item["loc"])
        if prefix:
            where = prefix if where == "(top level)" else f"{prefix}.{where}"
        problems.append(f"{where}: {item['msg']}")
    return problems


def _read_documents(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    if len(documents) == 1 and isinstance(documents[0], list):
        return list(documents[0])
    return documents


def load_case_file(path: Path | str) -> list[GoldenCase]:
    """Load every case of one file; raise :class:`CaseFileError` naming each bad field.

    A file holds one case (a mapping), a list of cases, or several YAML documents.
    """
    from .registry import default_registry

    path = Path(path)
    try:
        documents = _read_documents(path)
    except (yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CaseFileError(path, [f"(file) cannot be parsed: {exc}"]) from None
    except OSError as exc:
        raise CaseFileError(path, [f"(file) cannot be read: {exc.strerror}"]) from None
    if not documents:
        raise CaseFileError(path, ["(file) contains no case"])
    registry = default_registry()
    cases: list[GoldenCase] = []
    problems: list[str] = []
    for index, document in enumerate(documents):
        prefix = f"case[{index}]" if len(documents) > 1 else ""
        label = f"{prefix}." if prefix else ""
        if not isinstance(document, dict):
            problems.append(f"{prefix or '(top level)'}: a case must be a mapping, "
                            f"got {type(document).__name__}")
            continue
        try:
            case = GoldenCase.model_validate({**document, "path": str(path)})
        except ValidationError as exc:
            problems.extend(validation_problems(exc, prefix))
            continue
        spec = registry.tasks.get(case.task)
        if spec is None:
            known = ", ".join(sorted(registry.tasks))
            problems.append(f"{label}task: unknown task {case.task!r} (known: {known})")
            continue
        problems.extend(f"{label}{p}" for p in spec.check_case(case))
        cases.append(case)
    seen: dict[str, int] = {}
    for case in cases:
        seen[case.id] = seen.get(case.id, 0) + 1
    problems.extend(f"id: {cid!r} is used by {n} cases in this file"
                    for cid, n in seen.items() if n > 1)
    if problems:
        raise CaseFileError(path, problems)
    return cases


def iter_case_files(root: Path | str) -> Iterator[Path]:
    """Case files below ``root`` (or ``root`` itself), in a stable order."""
    root = Path(root)
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise FileNotFoundError(f"golden case path {root} does not exist")
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in CASE_SUFFIXES and not any(
            part.startswith(".") for part in path.relative_to(root).parts
        ):
            yield path


def scan_cases(
    root: Path | str, *, show: Callable[[Path], str] = str
) -> tuple[list[GoldenCase], list[CaseFileError]]:
    """Every good case below ``root`` and one error per bad file, so one bad file does not
    hide the others. A file reusing a case id of an earlier file is bad as a whole; ``show``
    renders the earlier file's path in that message."""
    cases: list[GoldenCase] = []
    errors: list[CaseFileError] = []
    owners: dict[str, Path] = {}
    for file in iter_case_files(root):
        try:
            loaded = load_case_file(file)
        except CaseFileError as exc:
            errors.append(exc)
            continue
        clashes = [c.id for c in loaded if c.id in owners]
        if clashes:
            errors.append(CaseFileError(file, [
                f"id: {cid!r} is already used by a case in {show(owners[cid])}"
                for cid in clashes]))
            continue
        owners.update((case.id, file) for case in loaded)
        cases.extend(loaded)
    return cases, errors


def load_cases(path: Path | str) -> list[GoldenCase]:
    """Load all golden cases below ``path``.

    Every bad file is reported (not just the first) in one :class:`CaseFileError`; a case id
    used in two files is an error naming both.
    """
    cases, errors = scan_cases(path)
    if errors:
        if len(errors) == 1:
            raise errors[0]
        raise CaseFileError(Path(path), [str(e) for e in errors])
    return cases
