"""Unpaired UTF-16 surrogates: code points a JSON ``\\ud800`` escape puts into a Python string
but no UTF-8 text can carry — writing one ends in a ``UnicodeEncodeError``, wherever the text
goes (a report, the result spool, the TF-IDF vectoriser's encoding). Standard library only.

A model's output holding one is scored with each replaced by U+FFFD (and a note saying so);
a golden case holding one is refused; text bound for a report is written with the same
replacement."""

from __future__ import annotations

import re
from typing import Any

_LONE = re.compile("[\ud800-\udfff]")
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
    when none did."""
    if isinstance(value, str):
        clean = replace_lone_surrogates(value)
        return clean, int(clean is not value)
    if isinstance(value, dict):
        items = [(without_lone_surrogates(k), without_lone_surrogates(v))
                 for k, v in value.items()]
        changed = sum(k[1] + v[1] for k, v in items)
        return ({k[0]: v[0] for k, v in items} if changed else value), changed
    if isinstance(value, list):
        parts = [without_lone_surrogates(v) for v in value]
        changed = sum(n for _, n in parts)
        return ([v for v, _ in parts] if changed else value), changed
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
