"""Where a chat call goes: a model on an OpenAI-compatible server and the key to reach it,
and a model under test as ``name=model@base_url``.

Standard library only (the HTTP library loads when a client is built), so the plugin can
parse model entries while it reads its options.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.defaults import DEFAULT_BASE_URL
from ..core.urls import (
    SHORTEST_REPLY_SECRET,
    base_url_start,
    redact,
    remember_secrets,
    safe_url,
)

if TYPE_CHECKING:
    from .wire import ChatClient

# A host the HTTP library reads as an IPv4 address (and refuses when it is not one).
_DIGITS_AND_DOTS = re.compile(r"[0-9.]+")

# Keyless OpenAI-compatible servers (vLLM, Ollama) ignore the header; a fixed stand-in keeps
# the request the same shape whether or not a key was given.
_DUMMY_KEY = "not-set"


class CallError(RuntimeError):
    """A configuration problem that makes every call fail (bad key, unknown model, no price
    for a budgeted model). The message is redacted."""


def first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first exception inside a (possibly nested) exception group."""
    first = group.exceptions[0]
    return first_error(first) if isinstance(first, BaseExceptionGroup) else first


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a server's base URL (not http or https, no host, not parsable),
    in words that do not repeat it (it may hold credentials); None when it can."""
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        # urlsplit drops tabs and line breaks without a word; the HTTP library refuses them.
        return "it holds a space, a line break or another unprintable character"
    try:
        parts = urllib.parse.urlsplit(url)
        # The port is parsed when it is read: one that is not a number raises here.
        host, _ = parts.hostname, parts.port
    except ValueError as exc:
        if "@" in url:
            # urlsplit's message quotes the part it failed on, which may be a password.
            return "it cannot be parsed (check its user:password@ part, host and port)"
        return f"it cannot be parsed ({exc})"
    if parts.scheme not in ("http", "https") or not url[len(parts.scheme):].startswith("://"):
        # ``http:/host`` and ``http:host`` parse as http URLs with no host.
        return "it is not an http:// or https:// URL"
    if not host:
        return "it names no host"
    if parts.query or parts.fragment or "?" in url or "#" in url:
        # Requests append their path to the base URL, so a query would not reach the server
        # as one (``/v1?key=K/chat/completions``); and a password's unencoded '#' or '?'
        # made the rest of the URL look like one, showing the password wherever the URL is.
        return ("it has a '?' or '#' part, which requests to it cannot carry: give the key "
                "in OPENAI_API_KEY, and write a '#', '?' or '/' of a password as %23, %3F "
                "or %2F")
    if _DIGITS_AND_DOTS.fullmatch(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return "its host is not a valid IPv4 address"
    return None


def key_problem(key: str) -> str | None:
    """Why ``key`` cannot go in an HTTP header, in words that do not repeat it; None when
    it can."""
    if key != key.strip() or any(not ch.isprintable() for ch in key):
        # A secret pasted with its line break: the HTTP library refused the header in an
        # error that quoted it whole.
        return ("it has a line break, a space at an end or another character an HTTP header "
                "cannot carry (remove the trailing newline of the secret, if it has one)")
    if not key.isascii():
        # The HTTP library encodes a header as ASCII, and its error was a traceback in every
        # test. A key an API issues is ASCII; a typographic quote is one pasted from a page.
        return ("it has a character outside ASCII, which an HTTP header cannot carry (a "
                "typographic quote, dash or space copied with it from a document?)")
    return None


class Endpoint:
    """A model on an OpenAI-compatible server, and the key to reach it.

    ``base_url`` falls back to ``OPENAI_BASE_URL`` then OpenAI itself; ``api_key`` to
    ``OPENAI_API_KEY``. The key is kept private and out of ``repr``.
    """

    def __init__(self, model: str, base_url: str | None = None,
                 api_key: str | None = None, *, cache_name: str | None = None) -> None:
        if not model:
            raise ValueError("a model name is required")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        problem = url_problem(self.base_url)
        if problem is not None:
            source = "the base URL" if base_url else "OPENAI_BASE_URL"
            raise ValueError(f"{source} of model {model!r} is not usable: {problem}")
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or ""
        problem = key_problem(self._api_key)
        if problem is not None:
            source = "the API key" if api_key else "OPENAI_API_KEY"
            raise ValueError(f"{source} of model {model!r} is not usable: {problem}")
        remember_secrets(self._api_key, self.base_url)
        self._cache_name = cache_name

    def __repr__(self) -> str:
        return f"Endpoint(model={self.model!r}, base_url={safe_url(self.base_url)!r})"

    @property
    def display_url(self) -> str:
        return safe_url(self.base_url)

    @property
    def cache_name(self) -> str:
        """Where replies come from, as cache keys name it: the base URL without credentials
        or a trailing ``/``, unless a stable name was given for a server whose URL changes
        from run to run (the local judge's loopback port)."""
        return self._cache_name or self.display_url.rstrip("/")

    @property
    def has_key(self) -> bool:
        return bool(self._api_key)

    @property
    def api_key_or_placeholder(self) -> str:
        """The key for a client to send (a placeholder for keyless servers); never log it."""
        return self._api_key or _DUMMY_KEY

    def redact(self, text: str) -> str:
        """``text`` with the key, and any credentials in the base URL (in every form a
        server could echo them, see ``core/urls.py``), blanked out."""
        return redact(text, self._api_key, self.base_url)

    def redact_reply(self, text: str) -> str:
        """A reply's content with the key and the URL's credentials blanked out, but for
        secrets too short to be any (``core/urls.SHORTEST_REPLY_SECRET``), which a reply
        keeps whole."""
        return redact(text, self._api_key, self.base_url, shortest=SHORTEST_REPLY_SECRET)

    def client(self, timeout: float) -> ChatClient:
        # The wire loads asyncio: with the first client, not while the plugin reads options.
        from .wire import ChatClient

        try:
            return ChatClient(self.base_url, self.api_key_or_placeholder, timeout)
        except Exception as exc:
            # A proxy setting the HTTP library cannot follow (socks5:// without socksio), and
            # the like: the tool's error, raised without the frames that hold the key.
            raise CallError(self.redact(f"no HTTP client for {self.display_url} could be "
                                        f"made ({type(exc).__name__}: {exc})")) from None

    @property
    def client_key(self) -> tuple[str, str]:
        """Identifies the HTTP client to use: the base URL without credentials and a digest
        of the key and the URL (never either itself, so the tuple is safe to log)."""
        secret = f"{self._api_key}\n{self.base_url}".encode()
        return (self.display_url, hashlib.sha256(secret).hexdigest()[:16])


@dataclass(frozen=True)
class ModelSpec:
    """A model under test: the name shown in the scorecard, the served model id, and where
    it is served (None: ``OPENAI_BASE_URL``, then OpenAI)."""

    name: str
    model: str
    base_url: str | None = None

    def __repr__(self) -> str:
        shown = None if self.base_url is None else safe_url(self.base_url)
        return f"ModelSpec(name={self.name!r}, model={self.model!r}, base_url={shown!r})"

    @classmethod
    def parse(cls, text: str) -> ModelSpec:
        """``name=model@base_url``; ``name=`` and ``@base_url`` are optional.

        ``@`` starts the base URL only when a URL follows (see ``core/urls.base_url_start``),
        so model ids that contain ``@`` stay whole; the first such ``@`` does, so a URL with
        credentials (``https://user:key@host/v1``) stays whole too, and the name ends at
        the first ``=`` before it (a password may hold one). A mistyped URL (``htps://``,
        ``http:/``) starts one too, and is refused as not usable rather than sent as part of
        the model id. An empty name before ``=`` and a trailing ``@`` with no URL after it
        (an unset variable) are refused too.
        """
        spec = text.strip()
        at = base_url_start(spec)
        head, base_url = (spec, None) if at is None else (spec[:at], spec[at + 1:])
        name, sep, model = head.partition("=")
        if not sep:
            name, model = "", head
        model, name = model.strip(), name.strip()
        if "://" in head:
            # A URL written without its model's '@': a name or model id holding it would
            # show its credentials wherever the model is named, so neither is repeated.
            raise ValueError("a model spec has a URL where its name or model id goes; "
                             "expected 'name=model@base_url' (name and @base_url optional)")
        if not model:
            # Without its base URL, which may be a mistyped one whose credentials no URL
            # reading finds.
            shown = head if base_url is None else f"{head}@<base URL>"
            raise ValueError(f"model spec {shown!r} names no model; expected "
                             "'name=model@base_url' (name and @base_url optional)")
        if sep and not name:
            # '=$NAME' with the variable unset: the entry would go unnamed without a word.
            shown = head if base_url is None else f"{head}@<base URL>"
            raise ValueError(f"model spec {shown!r} has no name before its '='; give one "
                             "('name=model@base_url'), or leave out the '=' to name it by "
                             "its model id")
        if base_url is None and model.endswith("@"):
            # 'model@$URL' with the variable unset: sent to OPENAI_BASE_URL under the model
            # id 'model@'. An '@' with more after it may be the model id's own.
            raise ValueError(f"model spec {spec!r} ends in an '@' with no base URL after "
                             "it; give the URL after the '@', or leave the '@' out to use "
                             "OPENAI_BASE_URL")
        problem = url_problem(base_url) if base_url is not None else None
        if problem is not None:
            raise ValueError(f"the base URL of model {model!r} is not usable: {problem}")
        return cls(name=name or model, model=model, base_url=base_url)
