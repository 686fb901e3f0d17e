"""Base URLs that may carry credentials (``https://user:password@host/v1``): where one
starts in a model spec, the form that may be shown, the credentials apart from the URL, and
every form in which they could come back in a server's or a library's text (standard
library only).

A URL's credentials reach the server as HTTP Basic authentication, ``base64(user:password)``
in the ``Authorization`` header, as the openai client and httpx2 send them: a server that
echoes its request headers in an error puts that token, not the password, into the text.
"""

from __future__ import annotations

import base64
import functools
import re
import urllib.parse

# The credentials of an http(s) URL written inside some other text (a model spec), up to the
# last ``@`` before a space: a password may hold ``/`` or ``#`` that urlsplit would cut at.
_CREDENTIALS_IN_TEXT = re.compile(r"(?i)(https?://)\S*@")

# Where the base URL of a model spec (``name=model@base_url``) starts: the first ``@``
# followed by an http(s) URL; failing that, the first followed by what can only be a mistyped
# one — a scheme and ``:/`` or ``//`` (``htps://``, ``http:/``, ``http//``), ``//`` alone, or
# ``user:password@`` — so a mistyped URL is refused as one instead of joining the model id,
# which the scorecard, the reports, the cache and the server all see, credentials and all.
# An ``@`` followed by none of these belongs to the model id (``claude@2024-10``).
_HTTP_AFTER_AT = re.compile(r"(?i)@(?=https?://)")
# Before such a URL, the mark of a mistyped one: a "/" after an "@", or an "@user:password"
# whose second part is not a digest's hex ("@sha256:abc" is one).
_MISTYPED_BEFORE = re.compile(r"(?i)@[^@]*/|@[^\s@:]*:(?![0-9a-f]+(?:@|$))[^\s@]*$")
_URL_AFTER_AT = re.compile(r"(?i)@(?=[a-z][a-z0-9+.-]*(?::/|//)|:?//|[^\s@]*:[^\s@]*@)")
# Failing that, the first ``@`` with a ``://`` anywhere after it (``@ https://``, ``@<https://``).
_SCHEME_LATER = re.compile(r"(?s)@(?=.*://)")


def safe_url(url: str) -> str:
    """``url`` without credentials in its authority part (``https://user:pw@host``); a URL
    that cannot be parsed, with any credentials it seems to hold blanked out (it is shown
    where the run says it could not be used, and must not end that run instead)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return without_credentials(url)
    if parts.username is None and parts.password is None:
        return url
    # The authority after its last '@', as written: an IPv6 host keeps its brackets (the
    # URL is also the one requests go to, not only the one shown).
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def url_credentials(url: str) -> tuple[str, str] | None:
    """The user and password of ``url``, percent-decoded as they are sent; None without."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return None
    return (urllib.parse.unquote(parts.username or ""),
            urllib.parse.unquote(parts.password or ""))


def _basic_token(credentials: tuple[str, str]) -> str:
    """HTTP Basic authentication's token: ``base64(user:password)``."""
    return base64.b64encode(":".join(credentials).encode()).decode("ascii")


def authorization(url: str, api_key: str) -> str:
    """The ``Authorization`` header a request to ``url`` carries: HTTP Basic with the URL's
    credentials when it has some (what httpx2 and the openai client send then, in place of
    the key), else the key as a bearer token. Every client of the package sends this."""
    credentials = url_credentials(url)
    return f"Bearer {api_key}" if credentials is None else f"Basic {_basic_token(credentials)}"


def url_secrets(url: str) -> list[str]:
    """Every form of ``url``'s password (its user, when it has no password) that a reply or
    an error could repeat: as written, percent-decoded, and inside the Basic authentication
    token. Longest first, so a text redacted in this order never keeps part of a longer
    one."""
    credentials = url_credentials(url)
    if credentials is None:
        return []
    user, password = credentials
    parts = urllib.parse.urlsplit(url)
    # A URL with a user alone (``https://TOKEN@host``) carries its secret there.
    raw = parts.password if parts.password is not None else parts.username
    forms = (raw, password or user, _basic_token(credentials))
    return sorted({form for form in forms if form}, key=len, reverse=True)


# The shortest secret searched for in a server's reply. Shorter keys are placeholders for
# keyless servers (``EMPTY``, ``none``, ``x``), no key an API issues; replacing one inside a
# reply corrupts it (``null`` in every verdict, ``a`` in every word), so a reply keeps them.
# Error messages are searched for secrets of any length, a shorter one where it stands alone.
SHORTEST_REPLY_SECRET = 8


def redact(text: str, api_key: str, url: str, *, shortest: int = 1) -> str:
    """``text`` with ``api_key`` and every form of ``url``'s credentials of at least
    ``shortest`` characters blanked out — also where JSON text spells some of a secret's
    characters as escapes (``\\u0074``, ``\\/``), which decoding the reply would undo. One
    shorter than :data:`SHORTEST_REPLY_SECRET` is blanked out only where no letter or digit
    touches it: the key ``x`` cut every ``x`` out of a message (``ma<redacted>imum``)."""
    for secret in ([api_key] if api_key else []) + url_secrets(url):
        if shortest <= len(secret) < SHORTEST_REPLY_SECRET:
            text = _standing_alone(secret).sub("<redacted>", text)
        elif len(secret) >= shortest:
            text = text.replace(secret, "<redacted>")
            if "\\" in text:
                text = _json_spellings(secret).sub("<redacted>", text)
            if "***" in text:
                text = _MASKED.sub(functools.partial(_unmasked, secret=secret), text)
    return text


# A key shown with its middle starred out, as OpenAI's "Incorrect API key provided:
# sk-abc12***********wxyz" shows it. A word of 3 to 64 characters, stars, and 4 to 64 more:
# bounded, so a long run of text before stars is not tried from each of its characters.
_MASKED = re.compile(
    r"(?<![^\s'\"(\[{<=:])([^\s'\"*(\[{<=:]{3,64})\*{3,}([^\s'\"*.,;:)\]}>]{4,64})")


def _unmasked(match: re.Match[str], *, secret: str) -> str:
    """``<redacted>`` when the starred word shows the start and the end of ``secret`` — the
    end at least 4 characters, so a starred-out word of a reply ("s***") stays itself."""
    head, tail = match.group(1), match.group(2)
    if len(head) + len(tail) < len(secret) and secret.startswith(head) and \
            secret.endswith(tail):
        return "<redacted>"
    return match.group()


# The characters JSON text may write with a short escape; a quote and a backslash must be.
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f",
                  "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@functools.lru_cache(maxsize=16)
def _json_spellings(secret: str) -> re.Pattern[str]:
    """``secret`` with each character as itself or as a JSON escape of it (a server may
    escape any character: ``\\u`` and four hex digits of either case, and the short escapes —
    ``\\/``, and ``\\"`` and ``\\\\``, which a reply holding a quote or a backslash must use)."""
    forms = []
    for char in secret:
        spellings = [re.escape(char)]
        if ord(char) <= 0xFFFF:
            spellings.append(rf"\\u(?i:{ord(char):04x})")
        if char in _SHORT_ESCAPES:
            spellings.append(re.escape(_SHORT_ESCAPES[char]))
        forms.append(f"(?:{'|'.join(spellings)})")
    return re.compile("".join(forms))


@functools.lru_cache(maxsize=16)
def _standing_alone(secret: str) -> re.Pattern[str]:
    """``secret``, in any of its JSON spellings, with no letter or digit on either side."""
    return re.compile(rf"(?<![0-9A-Za-z])(?:{_json_spellings(secret).pattern})(?![0-9A-Za-z])")


def base_url_start(spec: str) -> int | None:
    """Where the ``@`` before the base URL of the model spec ``spec`` is; None when the
    spec names no base URL."""
    # A model id may hold "x:y@" itself ("qwen@sha256:abc@http://host/v1"): a well-formed
    # URL is looked for first, unless what comes before it holds a mistyped one ("//", a
    # "user:password@" that is no digest), whose credentials would join the model id.
    http = _HTTP_AFTER_AT.search(spec)
    if http is not None and not _MISTYPED_BEFORE.search(spec[:http.start()]):
        return http.start()
    at = _URL_AFTER_AT.search(spec) or _SCHEME_LATER.search(spec)
    return None if at is None else at.start()


def without_credentials(text: str) -> str:
    """``text`` with the credentials of any http(s) URL in it blanked out."""
    return _CREDENTIALS_IN_TEXT.sub(r"\1<redacted>@", text)


# Every key and URL credential an endpoint of this process was given, in the forms a text
# could show them (see url_secrets): what a test's report carries out of the process —
# its traceback with the frames' local variables (pytest -l), its captured output — is
# searched for them (redact_known). Placeholders shorter than SHORTEST_REPLY_SECRET are no
# secret, and would corrupt every text they were searched in.
_KNOWN: set[str] = set()
# The same, longest first (one may hold another: a Basic token the user name), kept sorted
# as they are noted rather than for each of the three reports of every test.
_KNOWN_LONGEST_FIRST: tuple[str, ...] = ()


def remember_secrets(api_key: str, url: str) -> None:
    """Note ``api_key`` and ``url``'s credentials as this process's secrets (a URL that
    cannot be parsed is refused where it is used, saying so)."""
    try:
        in_url = url_secrets(url)
    except ValueError:
        in_url = []
    global _KNOWN_LONGEST_FIRST
    secrets = [secret for secret in [api_key, *in_url] if len(secret) >= SHORTEST_REPLY_SECRET]
    # Also as repr() shows it (a backslash doubled, a tab as \\t): pytest -l prints the
    # frames' local variables so.
    new = {*secrets, *(repr(secret)[1:-1] for secret in secrets)} - _KNOWN
    if new:
        _KNOWN.update(new)
        _KNOWN_LONGEST_FIRST = tuple(sorted(_KNOWN, key=len, reverse=True))


def redact_known(text: str) -> str:
    """``text`` with every secret :func:`remember_secrets` noted blanked out."""
    for secret in _KNOWN_LONGEST_FIRST:
        if secret in text:
            text = text.replace(secret, "<redacted>")
    return text


def knows_secrets() -> bool:
    return bool(_KNOWN)
