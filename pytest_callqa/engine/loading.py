"""Golden-case files: YAML or JSON on disk turned into :class:`GoldenCase` objects, each
checked against the task it names in a registry."""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from .calibration import label_problems
from .core.cases import GoldenCase, validation_problems
from .core.context import unreadable_json
from .core.unicode_text import first_lone_surrogate
from .registry import Registry, default_registry

CASE_SUFFIXES = (".yaml", ".yml", ".json")
# A case-file schema (``--callqa-case-schema``) may sit beside the cases; it is not a case.
SCHEMA_FILE_SUFFIX = ".schema.json"
# The key a case may carry to tell editors where its JSON Schema is; the loader sets it aside.
SCHEMA_KEY = "$schema"


class CaseFileError(ValueError):
    """A golden-case file that cannot be used, with the file and the offending field."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = Path(path)
        self.problems = problems
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid golden case file {self.path}:\n{listed}")



def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when a key appears twice in it: the parser would keep the
    last value without a word (a score written twice, the first one meant)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"key {key!r} appears twice in one object")
        data[key] = value
    return data


# A file is read as strict UTF-8, so an unpaired surrogate in its values can only come from
# an escape (JSON's and YAML's \ud800-\udfff, YAML's \U0000d800 too): a file without one
# needs no walk over every value. An escaped backslash before "ud800" matches as well, and
# only costs the walk.
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")


def _read_documents(path: Path) -> tuple[str, list[Any]]:
    """The file's text and its documents."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        # A byte-order mark is how an editor saved the file, as YAML's reader and the
        # recorded outputs' take it; json refuses it.
        text = text.removeprefix("\ufeff")
        data = json.loads(text, object_pairs_hook=_unique_keys)
        return text, data if isinstance(data, list) else [data]
    # PyYAML is imported with the first YAML file: a suite of JSON cases never needs it.
    import yaml

    try:
        documents = [doc for doc in yaml.load_all(text, Loader=_unique_key_loader())
                     if doc is not None]
    except yaml.YAMLError as exc:
        raise CaseFileError(path, [f"(file) cannot be parsed: {exc}"]) from None
    # An alias shares its anchor's value, so a few lines of anchors referring to anchors load
    # small and expand to billions of values once written out or scored. Only a file with
    # an anchor (&) can hold one.
    if "&" in text and _expanded_size(documents) > MAX_EXPANDED_VALUES:
        raise CaseFileError(path, [f"(file) its aliases expand to more than "
                                   f"{MAX_EXPANDED_VALUES:,} values"])
    if len(documents) == 1 and isinstance(documents[0], list):
        return text, list(documents[0])
    return text, documents


# Only a file with one of these can hold a value JSON cannot: NaN or an infinity (JSON's
# extensions; a number whose exponent has three digits, or a run of 200 digits or more —
# past 1.8e308 an exponent of at most 99 needs 210 before it — either of which may
# overflow to one), and in YAML also .nan, .inf and a tag of any spelling (!!timestamp,
# !<...>, a %TAG shorthand's !y!timestamp): a file without one needs no walk over every
# value (a JSON case loads in a few times the walk's time).
_MAYBE_NOT_JSON = {
    "json": re.compile(r"NaN|Infinity|[eE][+-]?\d{3}|\d{200}"),
    "yaml": re.compile(r"(?i:\.nan|\.inf)|!|[eE][+-]?\d{3}|\d{200}"),
}

_YAML_TAG = "tag:yaml.org,2002:"
# The plain scalars read as other than text: YAML 1.2's (true, 12, +12, -0.5, .5, 1e3; null
# as before) but for a number with a leading zero, and .inf and .nan, which the walk above
# then names. YAML 1.1, PyYAML's, also reads
# yes/no/on/off as booleans, 0123 as octal, 0x1F as hexadecimal, 10:30 as base 60 (630) and
# a bare date as a date: golden values (a zip code, a time, an answer) changed without a
# word. Those stay the text they are written as.
_YAML_SCALARS = (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^[-+]?(?:0|[1-9][0-9]*)$", "-+0123456789"),
    # After int: the first pattern that matches a scalar decides its type.
    ("float", r"^[-+]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$"
              r"|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$", "-+0123456789."),
)
# YAML 1.1's "=" (a mapping's default value) has no constructor either: it stopped the file.
_YAML_REPLACED = {f"{_YAML_TAG}{name}" for name in ("bool", "int", "float", "timestamp",
                                                    "value")}


def _first_non_json(document: dict[str, Any]) -> str | None:
    """The first value of ``document`` that JSON cannot hold, where it is and what it is —
    or None. Golden values are written into every report, spool and cache key as JSON: one
    that is not (a NaN, a date, bytes, a set) stopped the run at its first report."""
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for name, child in reversed(list(item.items())):
                # JSON writes a number, true or null as a key's text; nothing else.
                if not isinstance(name, (str, int, float, type(None))) or (
                        isinstance(name, float) and not math.isfinite(name)):
                    return (f"{where or '(top level)'}: the key {name!r} is not text; "
                            "quote it")
                stack.append((child, f"{where}.{name}" if where else str(name)))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]")
                         for index, child in reversed(list(enumerate(item))))
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{where}: {item!r} is not a number JSON can hold"
        elif not isinstance(item, (str, int, float, type(None))):
            shown = repr(item)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return (f"{where}: a {type(item).__name__} ({shown}) is not JSON data; write "
                    "it as text")
    return None


# Values a case file may expand to through YAML aliases: far above any real case (the
# example project's largest has ~2,000), far below what exhausts memory.
MAX_EXPANDED_VALUES = 1_000_000


def _expanded_size(root: Any) -> int:
    """How many values ``root`` holds written out, each shared container counted every time
    it is reached (iterative, and each container's size worked out once)."""
    sizes: dict[int, int] = {}
    # A container that holds itself (an alias inside its own anchor) never ends.
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        value, done = stack.pop()
        if not isinstance(value, (list, dict)) or (id(value) in sizes and not done):
            continue
        if not done and id(value) in open_:
            return MAX_EXPANDED_VALUES + 1
        children = list(value.values()) if isinstance(value, dict) else value
        if done:
            open_.discard(id(value))
            sizes[id(value)] = 1 + sum(sizes.get(id(c), 1) for c in children)
            if sizes[id(value)] > MAX_EXPANDED_VALUES:
                return sizes[id(value)]
            continue
        open_.add(id(value))
        stack.append((value, True))
        stack.extend((child, False) for child in children)
    return sizes.get(id(root), 1)


def _json_like_resolvers(resolvers: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
    """PyYAML's implicit resolvers with its booleans, numbers and dates replaced by
    :data:`_YAML_SCALARS`, and "=" read as text (null and the merge key kept)."""
    kept = {first: [(tag, pattern) for tag, pattern in found if tag not in _YAML_REPLACED]
            for first, found in resolvers.items()}
    for name, pattern, firsts in _YAML_SCALARS:
        for first in firsts:
            kept.setdefault(first, []).append((f"{_YAML_TAG}{name}", re.compile(pattern)))
    return kept


@functools.cache
def _unique_key_loader() -> type:
    """PyYAML's safe loader, refusing a mapping that gives a key twice (PyYAML keeps the
    last value without a word). A merge key (``<<``) may still be overridden, as YAML says.
    On libyaml's parser where PyYAML has it: ~10x faster than its pure-Python one (the
    example project's 32 case files: 26-46 ms against 284-460 ms), the same documents."""
    # Built with the first YAML file, as PyYAML itself is imported (see _read_documents).
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class UniqueKeyLoader(base):  # type: ignore[valid-type,misc]
        # Golden values are JSON data: a plain scalar is read as JSON would read it, or as
        # text (_YAML_SCALARS). A bare 2024-05-01 stays text too: YAML 1.1 would make it a
        # datetime.date, which no report can write and no model's JSON output can equal.
        yaml_implicit_resolvers: ClassVar[dict[Any, list[Any]]] = _json_like_resolvers(
            base.yaml_implicit_resolvers)

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
            # Each key as the JSON report writes it: 1 and '1' (or null and 'null') are one
            # key there, and the first value was lost.
            seen: dict[Any, Any] = {}
            keys: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, Hashable):
                    written = key if isinstance(key, str) or not isinstance(
                        key, (int, float, type(None))) else json.dumps(key)
                    # A Python dict holds 1 and 1.0 (or 1 and true) as one key too.
                    if written in seen or key in keys:
                        first = seen.get(written, key)
                        also = "" if repr(first) == repr(key) else \
                            f" (as {first!r} and {key!r}, which are one key)"
                        raise yaml.constructor.ConstructorError(
                            "while reading a mapping", node.start_mark,
                            f"found the key {key!r} twice{also}", key_node.start_mark)
                    seen[written] = key
                    keys.add(key)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def load_case_file(path: Path | str, registry: Registry | None = None) -> list[GoldenCase]:
    """Load every case of one file; raise :class:`CaseFileError` naming each bad field.

    A file holds one case (a mapping), a list of cases, or several YAML documents. Each case
    is checked by the task it names in ``registry`` (the built-in tasks by default); a
    ``$schema`` key, which only tells editors where the case schema is, is set aside.
    """
    path = Path(path)
    try:
        text, documents = _read_documents(path)
    except RecursionError as exc:
        raise CaseFileError(path, [f"(file) cannot be parsed: {unreadable_json(exc)}"]) from None
    except CaseFileError:
        # Says what is wrong already (a ValueError too, it was wrapped in itself).
        raise
    except ValueError as exc:
        # Bad JSON, bytes that are not UTF-8, a number of over 4,300 digits.
        raise CaseFileError(path, [f"(file) cannot be parsed: {exc}"]) from None
    except OSError as exc:
        raise CaseFileError(path, [f"(file) cannot be read: {exc.strerror}"]) from None
    if not documents:
        raise CaseFileError(path, ["(file) contains no case"])
    escapes = _SURROGATE_ESCAPE.search(text) is not None
    syntax = "json" if path.suffix.lower() == ".json" else "yaml"
    maybe_foreign = _MAYBE_NOT_JSON[syntax].search(text) is not None
    registry = registry or default_registry()
    cases: list[GoldenCase] = []
    problems: list[str] = []
    for index, document in enumerate(documents):
        prefix = f"case[{index}]" if len(documents) > 1 else ""
        label = f"{prefix}." if prefix else ""
        if not isinstance(document, dict):
            problems.append(f"{prefix or '(top level)'}: a case must be a mapping, "
                            f"got {type(document).__name__}")
            continue
        document = dict(document)
        reference = document.pop(SCHEMA_KEY, None)
        if reference is not None and not isinstance(reference, str):
            problems.append(f"{label}{SCHEMA_KEY}: must be the schema's URL or path (a "
                            f"string), got {type(reference).__name__}")
        if "path" in document:
            # The loader sets it to the file's location: the value written was replaced
            # without a word (the only unknown key the schema did not refuse).
            problems.append(f"{label}path: is the case file's own location, set when it is "
                            "read; remove the key")
            continue
        foreign = _first_non_json(document) if maybe_foreign else None
        if foreign is not None:
            problems.append(f"{label}{foreign}")
            continue
        unpaired = first_lone_surrogate(document) if escapes else None
        if unpaired is not None:
            # JSON's "\ud800" escape alone: not Unicode, and no report could write it.
            problems.append(f"{label}{unpaired}: holds an unpaired UTF-16 surrogate (a lone "
                            "\\ud800-\\udfff escape), which is not Unicode text")
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
        problems.extend(f"{label}{p}" for p in label_problems(case,
                                                             registry.metrics_for(case.task)))
        cases.append(case)
    seen: dict[str, int] = {}
    for case in cases:
        seen[case.id] = seen.get(case.id, 0) + 1
    problems.extend(f"id: {cid!r} is used by {n} cases in this file"
                    for cid, n in seen.items() if n > 1)
    if problems:
        raise CaseFileError(path, problems)
    return cases


def reread_case_file(path: Path | str) -> list[GoldenCase]:
    """The cases of a file :func:`load_case_file` has accepted and that has not changed
    since, built again without the task families' checks (a sixth of the time)."""
    path = Path(path)
    cases = []
    for document in _read_documents(path)[1]:
        fields = {k: v for k, v in document.items() if k != SCHEMA_KEY}
        cases.append(GoldenCase.model_validate({**fields, "path": str(path)}))
    return cases


def iter_case_files(root: Path | str) -> Iterator[Path]:
    """Case files below ``root`` (or ``root`` itself), in a stable order; hidden files and
    ``*.schema.json`` files are not cases."""
    root = Path(root)
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise FileNotFoundError(f"golden case path {root} does not exist")
    yield from sorted(_case_paths(root))


def _case_paths(root: Path) -> Iterator[Path]:
    """Every case path below ``root``, through symlinked directories too (each real
    directory once, so a link back up ends); a case-named entry that is no readable file (a
    dangling link) is yielded as well, for reading it to say so rather than skip it."""
    seen: set[str] = set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs.clear()
            continue
        seen.add(real)
        relative = Path(folder).relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            dirs.clear()
            continue
        dirs.sort()
        for name in files:
            path = Path(folder, name)
            # "CASE.YAML" is a case file too: left out, its cases would vanish without a word.
            if (path.suffix.lower() in CASE_SUFFIXES and not name.startswith(".")
                    and not name.lower().endswith(SCHEMA_FILE_SUFFIX)
                    and (path.is_file() or not path.exists())):
                yield path


def scan_case_files(
    root: Path | str, *, show: Callable[[Path], str] = str, registry: Registry | None = None,
) -> Iterator[list[GoldenCase] | CaseFileError]:
    """File by file below ``root``: its good cases, or the error that makes it bad, so one
    bad file does not hide the others and no more than one file's cases need be in memory.
    A file reusing a case id of an earlier file is bad as a whole; ``show`` renders the
    earlier file's path in that message."""
    owners: dict[str, Path] = {}
    for file in iter_case_files(root):
        try:
            loaded = load_case_file(file, registry)
        except CaseFileError as exc:
            yield exc
            continue
        clashes = [c.id for c in loaded if c.id in owners]
        if clashes:
            yield CaseFileError(file, [
                f"id: {cid!r} is already used by a case in {show(owners[cid])}"
                for cid in clashes])
            continue
        owners.update((case.id, file) for case in loaded)
        yield loaded


def scan_cases(
    root: Path | str, *, show: Callable[[Path], str] = str, registry: Registry | None = None,
) -> tuple[list[GoldenCase], list[CaseFileError]]:
    """Every good case below ``root`` and one error per bad file (:func:`scan_case_files`)."""
    cases: list[GoldenCase] = []
    errors: list[CaseFileError] = []
    for found in scan_case_files(root, show=show, registry=registry):
        if isinstance(found, CaseFileError):
            errors.append(found)
        else:
            cases.extend(found)
    return cases, errors


def load_cases(path: Path | str, registry: Registry | None = None) -> list[GoldenCase]:
    """Load all golden cases below ``path``.

    Every bad file is reported (not just the first) in one :class:`CaseFileError`; a case id
    used in two files is an error naming both.
    """
    cases, errors = scan_cases(path, registry=registry)
    if errors:
        if len(errors) == 1:
            raise errors[0]
        raise CaseFileError(Path(path), [str(e) for e in errors])
    return cases
