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

And whether a text says anything at all (a letter or a digit), which a case check asks
without loading the engine's text module (numpy, rapidfuzz).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_LONE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL and C1, zero-width and bidi formatting characters,
# line and paragraph separators, the byte-order mark.
_UNSHOWABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e"
                         "\u2060-\u2069\ufeff]")
REPLACEMENT = "\ufffd"
# A JSON escape of a surrogate (\ud800 to \udfff), paired or not.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each unpaired surrogate replaced by U+FFFD (``text`` itself when it has
    none: checked at C speed)."""
    if not _holds_surrogate(text):
        return text
    return _LONE.sub(REPLACEMENT, text)


def _holds_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    # UTF-8 encodes every code point but a surrogate: faster than a search for one.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def without_lone_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` (a JSON value: strings, lists, dicts) with every unpaired surrogate in its
    strings and keys replaced by U+FFFD, and how many strings held one; ``value`` itself
    when none did (found without building anything: every output is checked)."""
    if not _holds_lone(value):
        return value, 0
    return _replaced(value)


def json_may_hold_lone(text: str) -> bool:
    """Whether the value JSON ``text`` decodes to may hold an unpaired surrogate: ``text``
    holds one as it is, or a surrogate's escape. Cheaper than walking the value (each check
    runs at C speed), so most outputs, which hold neither, skip the walk."""
    if "\\" in text and _SURROGATE_ESCAPE.search(text) is not None:
        return True
    return _holds_surrogate(text)


def _holds_lone(value: Any) -> bool:
    # A loop over a stack, not a recursion: it runs over every output, most of them clean.
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and _holds_surrogate(item):
                return True
        elif kind is dict:
            stack.extend(item)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False


def _replaced(value: Any) -> tuple[Any, int]:
    # A loop over a stack, as in _holds_lone: a recursion ran out of frames on a value
    # nested ~500 deep, which json.loads still reads. Children are taken in their order,
    # so of two keys that become one, the later one's value is kept, as a dict keeps it.
    count = 0
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, target, slot = stack.pop()
        kind = type(item)
        if kind is str:
            clean = replace_lone_surrogates(item)
            count += clean is not item
            target[slot] = clean
        elif kind is dict:
            copy: dict[Any, Any] = {}
            target[slot] = copy
            children = []
            for key, child in item.items():
                if type(key) is str:
                    clean = replace_lone_surrogates(key)
                    count += clean is not key
                    key = clean
                copy[key] = None
                children.append((child, copy, key))
            stack.extend(reversed(children))
        elif kind is list:
            copied: list[Any] = [None] * len(item)
            target[slot] = copied
            stack.extend((child, copied, i) for i, child in reversed(list(enumerate(item))))
        else:
            target[slot] = item
    return root[0], count


def first_lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where in ``value`` the first string holding an unpaired surrogate is (``a.b[2]``
    style), or None."""
    # A loop over a stack (see _replaced); entries are (value, its path, the key it is
    # under and that key's dict's path) in the order a walk from the top meets them.
    stack: list[tuple[Any, str, Any, str]] = [(value, where, None, "")]
    while stack:
        item, path, key, parent = stack.pop()
        if isinstance(key, str) and replace_lone_surrogates(key) is not key:
            return f"{parent}.{key!r}" if parent else repr(key)
        if isinstance(item, str):
            if replace_lone_surrogates(item) is not item:
                return path or "(value)"
        elif isinstance(item, dict):
            stack.extend((child, f"{path}.{name}" if path else str(name), name, path)
                         for name, child in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]", None, path)
                         for index, child in reversed(list(enumerate(item))))
    return None


def unshowable(text: str) -> str | None:
    """The first control or invisible formatting character of ``text``, or None."""
    found = _UNSHOWABLE.search(text)
    return None if found is None else found.group()


def showable(text: str) -> str:
    """``text`` with each control or invisible formatting character written as its Python
    escape (``\\x1b``, ``\\u202e``); tabs and newlines kept."""
    return _UNSHOWABLE.sub(lambda m: repr(m.group())[1:-1], text)


def has_words(text: str) -> bool:
    """Whether ``text`` holds a letter or a digit: a reply of "...", an emoji or a
    zero-width space (format characters, which ``str.strip`` keeps) says nothing."""
    # Nearly every text begins with a letter (str.isalpha is exactly the category L):
    # found without a generator over its characters.
    if text[:1].isalpha():
        return True
    return any(unicodedata.category(char)[0] in "LN" for char in text)
