"""One cheap check of an endpoint before a run sends it hundreds of calls: a key where the
endpoint needs one, the server reachable, and the model served when the server lists its
models. A run whose judge cannot be reached should stop with one clear message, not end in
hundreds of judge errors."""

from __future__ import annotations

import urllib.parse
from pathlib import PurePosixPath

from .endpoint import Endpoint

# Hosts that refuse every request without a key; keyless OpenAI-compatible servers (vLLM,
# Ollama, llama.cpp) accept one, so a missing key is only known to be wrong here.
KEYED_HOSTS = frozenset({"api.openai.com"})
PREFLIGHT_TIMEOUT_S = 10.0
_SHOWN_MODELS = 8


def _served(model: str, served: list[str]) -> bool:
    # llama.cpp names its model by the file it loaded: a name matching the file counts.
    names = {PurePosixPath(m).name for m in served} | {PurePosixPath(m).stem for m in served}
    return model in served or model in names


def check_endpoint(endpoint: Endpoint, *, timeout: float = PREFLIGHT_TIMEOUT_S,
                   what: str = "judge") -> str | None:
    """None when ``endpoint`` can take calls; otherwise what is wrong and what to set."""
    url = endpoint.display_url
    where = f"the {what} endpoint {url} (model {endpoint.model!r})"
    host = urllib.parse.urlsplit(endpoint.base_url).hostname or ""
    if host in KEYED_HOSTS and not endpoint.has_key:
        return (f"{where} needs an API key and none is set: export OPENAI_API_KEY, or point "
                "the run at another server with --callqa-judge-base-url (or OPENAI_BASE_URL)")
    # The openai client loads only for a run that calls a server.
    import openai

    client = openai.OpenAI(api_key=endpoint.api_key_or_placeholder, base_url=endpoint.base_url,
                           timeout=timeout, max_retries=0)
    try:
        served = [m.id for m in client.models.list().data]
    except (openai.APIConnectionError, openai.APITimeoutError) as exc:
        return endpoint.redact(
            f"{where} cannot be reached ({type(exc).__name__}: {exc}): check "
            "--callqa-judge-base-url (or OPENAI_BASE_URL) and that the server is running")
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        return endpoint.redact(
            f"{where} refused the key (HTTP {exc.status_code}): set OPENAI_API_KEY to a key "
            "this server accepts")
    except openai.APIStatusError:
        # A server without a model listing (or one that refuses it) still answers chat
        # calls; the model is checked by the first of them.
        return None
    finally:
        client.close()
    if served and not _served(endpoint.model, served):
        shown = ", ".join(served[:_SHOWN_MODELS]) + (", …" if len(served) > _SHOWN_MODELS
                                                      else "")
        option = "--callqa-judge-model" if what == "judge" else "callqa_models"
        return (f"{where}: the server does not serve {endpoint.model!r} (it serves: {shown}): "
                f"set {option}")
    return None
