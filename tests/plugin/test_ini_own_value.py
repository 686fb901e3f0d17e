"""The ini file's own value of a key, read past ``-o`` overrides, in every file pytest reads
its configuration from."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_callqa.ini_file import UNREADABLE, own_ini_value


def config_of(path: Path | None) -> Any:
    return SimpleNamespace(inipath=path)


M, C = "callqa_models", "callqa_cases"


@pytest.mark.parametrize(("name", "text", "key", "expected"), [
    ("pyproject.toml", '[tool.pytest.ini_options]\ncallqa_models = ["a", "b"]\n', M, ["a", "b"]),
    ("pyproject.toml", '[tool.pytest]\ncallqa_models = ["a"]\n', M, ["a"]),
    ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-q'\n", M, None),
    ("pytest.toml", '[pytest]\ncallqa_models = ["a"]\n', M, ["a"]),
    (".pytest.toml", "", M, None),
    ("pytest.ini", "[pytest]\ncallqa_models = a b\n", M, "a b"),
    ("tox.ini", "[tox]\nenvlist = py\n[pytest]\ncallqa_cases = golden\n", C, "golden"),
    ("tox.ini", "[tox]\nenvlist = py\n", C, None),
    ("setup.cfg", "[tool:pytest]\ncallqa_cases = golden\n", C, "golden"),
    # setup.cfg's section is [tool:pytest]; pytest reads no [pytest] there.
    ("setup.cfg", "[pytest]\ncallqa_cases = golden\n", C, None),
])
def test_the_file_s_own_value_in_every_kind_of_ini_file(
        tmp_path: Path, name: str, text: str, key: str, expected: Any) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert own_ini_value(config_of(path), key) == expected


def test_no_ini_file_sets_nothing() -> None:
    assert own_ini_value(config_of(None), "callqa_cases") is None


@pytest.mark.parametrize(("name", "content"), [
    ("pytest.ini", b"[pytest]\n  continued without a key\n"),
    ("pyproject.toml", b"[tool.pytest.ini_options\n"),
    ("pytest.toml", "[pytest]\ncallqa_cases = 'x'\n".encode("utf-16")),
    ("tox.ini", b"[pytest]\ncallqa_cases = \xff\xfe\n"),
])
def test_a_file_that_cannot_be_read_again_is_unreadable_not_an_error(
        tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert own_ini_value(config_of(path), "callqa_cases") is UNREADABLE


def test_a_file_gone_since_pytest_read_it_is_unreadable(tmp_path: Path) -> None:
    assert own_ini_value(config_of(tmp_path / "pytest.ini"), "callqa_cases") is UNREADABLE


@pytest.mark.parametrize(("name", "text"), [
    ("ci.toml", '[tool.pytest.ini_options]\ncallqa_cases = "cases"\n'),
    ("ci.cfg", "[tool:pytest]\ncallqa_cases = cases\n"),
    ("ci.ini", "[pytest]\ncallqa_cases = cases\n"),
])
def test_a_file_given_with_c_is_not_read_again(tmp_path: Path, name: str, text: str) -> None:
    # pytest picks such a file's table by name, then suffix, with fallbacks: read from the
    # wrong one ([pytest] of a custom .toml), its value was None, and an override that
    # narrowed the cases was not one; snapshot updates then deleted the others'.
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert own_ini_value(config_of(path), "callqa_cases") is UNREADABLE
