"""One cheap check of an endpoint before a run sends it hundreds of calls: a key where the
endpoint needs one, the server reachable, and the model served when the server lists its
models. A run whose judge cannot be reached should stop with one clear message, not end in
hundreds of judge errors.

Standard library only: the xdist controller checks every endpoint and never sends a chat
call, and a run answered from the cache sends none either, so neither should pay for loading
the openai client (up to a second of CPU while the workers start on the same cores).
"""

from __future__ import annotations

import http.client
import json
import string
import urllib.error
import urllib.parse
import urllib.request
from pathlib import PurePosixPath
from typing import Any

from ..core.urls import authorization
from .endpoint import Endpoint

# Hosts that refuse every request without a key; keyless OpenAI-compatible servers (vLLM,
# Ollama, llama.cpp) accept one, so a missing key is only known to be wrong here.
KEYED_HOSTS = frozenset({"api.openai.com"})
PREFLIGHT_TIMEOUT_S = 10.0
_SHOWN_MODELS = 8


class _KeepingCredentialsHome(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, without the ``Authorization`` header on one to another origin
    (scheme, host or port): urllib copies every header, so a server answering ``/models``
    with a redirect elsewhere was handed the key (the chat calls' client drops it)."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(new.full_url) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


_OPENER = urllib.request.build_opener(_KeepingCredentialsHome)


def _ascii_path(url: str) -> str:
    """``url`` with its path percent-encoded beyond ASCII (``/vé1`` as ``/v%C3%A91``), as the
    chat calls' HTTP library sends it: urllib refuses to send such a path."""
    parts = urllib.parse.urlsplit(url)
    # Every printable ASCII character is kept as written (letters and digits always are).
    return urllib.parse.urlunsplit(parts._replace(
        path=urllib.parse.quote(parts.path, safe=string.punctuation)))


def _served(model: str, served: list[str]) -> bool:
    # llama.cpp names its model by the file it loaded: a name matching the file counts.
    names = {PurePosixPath(m).name for m in served} | {PurePosixPath(m).stem for m in served}
    return model in served or model in names


def _listed(body: bytes) -> list[str]:
    """The model ids of a ``GET /models`` answer (none when it is not a model list)."""
    try:
        data = json.loads(body).get("data")
    except (ValueError, AttributeError, RecursionError):
        return []
    if not isinstance(data, list):
        return []
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]


def check_endpoint(endpoint: Endpoint, *, timeout: float = PREFLIGHT_TIMEOUT_S,
                   what: str = "judge", unreachable_hint: str | None = None) -> str | None:
    """None when ``endpoint`` can take calls; otherwise what is wrong and what to set.
    ``unreachable_hint`` replaces the advice for a server that cannot be reached (the local
    judge's server has no URL option to check)."""
    url = endpoint.display_url
    where = f"the {what} endpoint {url} (model {endpoint.model!r})"
    # Where that URL was set: a live model's comes from its callqa_models entry.
    setting = ("--callqa-judge-base-url (or OPENAI_BASE_URL)" if what == "judge" else
               "its callqa_models entry (name=model@URL; OPENAI_BASE_URL when it names none)")
    host = urllib.parse.urlsplit(endpoint.base_url).hostname or ""
    if host in KEYED_HOSTS and not endpoint.has_key:
        return (f"{where} needs an API key and none is set: export OPENAI_API_KEY, or point "
                f"the run at another server with {setting}")
    # The display URL: credentials in the authority are not a host urllib can connect to.
    # Authorised as the chat calls will be: a URL's credentials replace the key there.
    request = urllib.request.Request(
        _ascii_path(url.rstrip("/") + "/models"),
        headers={"Authorization": authorization(endpoint.base_url,
                                                endpoint.api_key_or_placeholder)})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            served = _listed(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return endpoint.redact(
                f"{where} refused the key (HTTP {exc.code}): set OPENAI_API_KEY to a key "
                "this server accepts")
        # A server without a model listing (or one that refuses it) still answers chat
        # calls; the model is checked by the first of them.
        return None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        # URLError (refused, unknown host), timeouts and cut connections are all OSErrors;
        # a URL or header urllib cannot encode is a ValueError (UnicodeEncodeError).
        reason = getattr(exc, "reason", exc)
        hint = unreachable_hint or f"check {setting} and that the server is running"
        return endpoint.redact(
            f"{where} cannot be reached ({type(exc).__name__}: {reason}): {hint}")
    if served and not _served(endpoint.model, served):
        shown = ", ".join(served[:_SHOWN_MODELS]) + (", …" if len(served) > _SHOWN_MODELS
                                                      else "")
        option = "--callqa-judge-model" if what == "judge" else "callqa_models"
        return (f"{where}: the server does not serve {endpoint.model!r} (it serves: {shown}): "
                f"set {option}")
    return None
