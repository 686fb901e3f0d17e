"""Text no output of the run may carry as it is (standard library only).

Unpaired UTF-16 surrogates: code points a JSON ``\\ud800`` escape puts into a Python string
but no UTF-8 text can carry — writing one ends in a ``UnicodeEncodeError``, wherever the text
goes (a report, the result spool, the TF-IDF vectoriser's encoding). A model's output holding
one is scored with each replaced by U+FFFD (and a note saying so); a golden case holding one
is refused; text bound for a report is written with the same replacement.

Control and invisible formatting characters: an escape sequence in a model's output or name
printed to a terminal or a CI log acts (it can erase or recolour lines), a bidi override
reorders what a reader sees, and XML cannot hold most C0 controls at all. A model name
holding one is refused; failure messages show them escaped.
"""

from __future__ import annotations

import re
from typing import Any

_LONE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL and C1, zero-width and bidi formatting characters,
# line and paragraph separators, the byte-order mark.
_UNSHOWABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e"
                         "\u2060-\u2069\ufeff]")
REPLACEMENT = "\ufffd"


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each unpaired surrogate replaced by U+FFFD (``text`` itself when it has
    none: ASCII is checked at C speed)."""
    if text.isascii() or _LONE.search(text) is None:
        return text
    return _LONE.sub(REPLACEMENT, text)


def without_lone_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` (a JSON value: strings, lists, dicts) with every unpaired surrogate in its
    strings and keys replaced by U+FFFD, and how many strings held one; ``value`` itself
    when none did (found without building anything: every output is checked)."""
    if not _holds_lone(value):
        return value, 0
    return _replaced(value)


def _holds_lone(value: Any) -> bool:
    # A loop over a stack, not a recursion: it runs over every output, most of them clean.
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and _LONE.search(item) is not None:
                return True
        elif kind is dict:
            stack.extend(item)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False


def _replaced(value: Any) -> tuple[Any, int]:
    if isinstance(value, str):
        clean = replace_lone_surrogates(value)
        return clean, int(clean is not value)
    if isinstance(value, dict):
        items = [(_replaced(k), _replaced(v)) for k, v in value.items()]
        return {k[0]: v[0] for k, v in items}, sum(k[1] + v[1] for k, v in items)
    if isinstance(value, list):
        parts = [_replaced(v) for v in value]
        return [v for v, _ in parts], sum(n for _, n in parts)
    return value, 0


def first_lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where in ``value`` the first string holding an unpaired surrogate is (``a.b[2]``
    style), or None."""
    if isinstance(value, str):
        return where or "(value)" if replace_lone_surrogates(value) is not value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and replace_lone_surrogates(key) is not key:
                return f"{where}.{key!r}" if where else repr(key)
            found = first_lone_surrogate(item, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = first_lone_surrogate(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


def unshowable(text: str) -> str | None:
    """The first control or invisible formatting character of ``text``, or None."""
    found = _UNSHOWABLE.search(text)
    return None if found is None else found.group()


def showable(text: str) -> str:
    """``text`` with each control or invisible formatting character written as its Python
    escape (``\\x1b``, ``\\u202e``); tabs and newlines kept."""
    return _UNSHOWABLE.sub(lambda m: repr(m.group())[1:-1], text)
