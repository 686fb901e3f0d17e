"""The ini file pytest read, as the TOML it is: the project's own tables (``[tool.callqa]``
policies), the values pytest turns into text before the plugin sees them (``true`` would
become a path named "True"), and the check that pytest read the project's file at all."""

from __future__ import annotations

import functools
import itertools
import os
import tomllib
from pathlib import Path
from typing import Any

import iniconfig
import pytest

# pytest's configuration files in the order it looks for them, and what marks one as
# pytest's (None: any content; pytest 9 reads pytest.toml even when empty).
INI_FILES: dict[str, str | None] = {
    "pytest.toml": None, ".pytest.toml": None, "pytest.ini": None, ".pytest.ini": None,
    "pyproject.toml": "[tool.pytest", "tox.ini": "[pytest]", "setup.cfg": "[tool:pytest]"}


def read_toml(path: Path, what: str) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise pytest.UsageError(f"{what} {path} does not exist") from None
    except UnicodeDecodeError as exc:
        # TOML is UTF-8: a file saved as UTF-16 (PowerShell's redirection) ended the run in
        # an INTERNALERROR traceback.
        raise pytest.UsageError(f"{what} {path} cannot be read: it is not UTF-8 text (byte "
                                f"{exc.start}); save it as UTF-8") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise pytest.UsageError(f"{what} {path} cannot be read: {exc}") from None


def ini_toml(path: Path) -> dict[str, Any]:
    """The pyproject.toml pytest read, parsed once per version of the file (its ini keys'
    types and the project's ``[tool.callqa]`` are both read from it at start-up)."""
    try:
        modified = path.stat().st_mtime_ns
    except OSError:
        return read_toml(path, "the ini file")
    return _parsed(path, modified)


@functools.lru_cache(maxsize=4)
def _parsed(path: Path, modified: int) -> dict[str, Any]:
    return read_toml(path, "the ini file")


def _ini_options(path: Path) -> dict[str, Any]:
    """The ini keys of a pyproject.toml, as TOML typed them."""
    tool = ini_toml(path).get("tool", {})
    pytest_table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
    if not isinstance(pytest_table, dict):
        return {}
    ini = pytest_table.get("ini_options")
    return {**pytest_table, **ini} if isinstance(ini, dict) else pytest_table


def raw_ini(config: pytest.Config, name: str) -> Any:
    """The value of ini key ``name`` as the file typed it, when pytest read a pyproject.toml
    (None otherwise: other ini files hold text only, and pytest checks the types of a
    pytest.toml's itself)."""
    path = config.inipath
    if path is None or path.name != "pyproject.toml":
        return None
    return _ini_options(path).get(name)


# What ``own_ini_value`` answers when the ini file cannot be read as pytest read it.
UNREADABLE: Any = object()


def own_ini_value(config: pytest.Config, name: str) -> Any:
    """The value of ini key ``name`` as the ini file itself holds it (None when it sets
    none), whatever ``-o`` overrides the command line gives: pytest merges those into its
    copy of the file, and getini answers with them. :data:`UNREADABLE` when the file cannot
    be read again."""
    path = config.inipath
    if path is None:
        return None
    if path.name not in INI_FILES:
        # A file given with -c: pytest picks its table by name, then by suffix, with
        # fallbacks of its own; taken for unknown rather than read from the wrong table.
        return UNREADABLE
    try:
        if path.name == "pyproject.toml":
            return _ini_options(path).get(name)
        if path.suffix == ".toml":  # pytest.toml, .pytest.toml
            table = read_toml(path, "the ini file").get("pytest", {})
            return table.get(name) if isinstance(table, dict) else None
        section = "tool:pytest" if path.name == "setup.cfg" else "pytest"
        ini = iniconfig.IniConfig(path)
        return ini[section].get(name) if section in ini else None
    except (pytest.UsageError, OSError, UnicodeDecodeError, iniconfig.ParseError):
        return UNREADABLE


def callqa_table(data: dict[str, Any], path: Path, default: Any) -> Any:
    """``[tool.callqa]`` of a TOML file (``default`` without one), which must be a table."""
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise pytest.UsageError(f"{path}: 'tool' should be a table, not {tool!r}")
    table = tool.get("callqa", default)
    if table is not None and not isinstance(table, dict):
        raise pytest.UsageError(f"{path}: 'tool.callqa' should be a table, not {table!r}")
    return table


def check_rootdir(config: pytest.Config, takes_value: set[str]) -> None:
    """pytest chooses the rootdir, and so the ini file it reads, before plugins' options are
    known: the value of ``--callqa-cache-dir /elsewhere`` (a separate word) is taken for a
    test path, and one outside the current directory moves the rootdir above it, where the
    project's ini file is not found — or to another project's (``--callqa-baseline
    ../main/report.json``: a checkout of the main branch) or a parent's, whose settings,
    cases and outputs the run then reads. The run would go on with another file's settings
    or none; it stops instead, naming the option and the fix (``--callqa-cache-dir=/elsewhere``)."""
    if config.option.inifilename:
        return  # the ini file the user named with -c, whatever the test paths
    here = Path(config.invocation_params.dir).resolve()
    # Arguments first: a session without such an option reads no file here.
    values = [(option, value) for option, value
              in itertools.pairwise(config.invocation_params.args)
              if option in takes_value and not value.startswith("-")
              and (path := (here / value).resolve()).exists()
              and not path.is_relative_to(here)]
    if not values:
        return
    taken = {(here / value).resolve() for _option, value in values}
    # The file pytest would have read without the values: the nearest up from the common
    # folder of the test paths given (of here, given none).
    own = [path for arg in config.args
           if (path := (here / arg.split("::")[0]).resolve()) not in taken]
    start = Path(os.path.commonpath(own)) if own else here
    expected = next((folder / name for folder in (start, *start.parents) for name in INI_FILES
                     if _pytest_ini(folder / name)), None)
    read = None if config.inipath is None else config.inipath.resolve()
    if expected is None or expected == read:
        return
    option, value = values[0]
    shown = expected.name if expected.parent == here else expected
    raise pytest.UsageError(
        f"callqa: pytest did not read {shown}: it chose the rootdir {config.rootpath}"
        + (f" and its ini file {config.inipath}" if config.inipath is not None else "")
        + f" before it knew callqa's options, taking the value of '{option} {value}' for a "
        f"test path; write '{option}={value}' (with '=') and it reads {shown}")


def _pytest_ini(path: Path) -> bool:
    """Whether ``path`` is a file pytest would take its configuration from."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    marker = INI_FILES[path.name]
    return marker is None or marker in text
