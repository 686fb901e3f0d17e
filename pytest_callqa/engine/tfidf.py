"""Character and word TF-IDF vectors, computed exactly as scikit-learn's ``TfidfVectorizer``
computes them (the same rows, bit for bit), in numpy alone: a comparison of two short texts
is a few hundred microseconds instead of the vectoriser's milliseconds. Also the two row
helpers every embedder shares: blank texts, and L2 normalisation that keeps a zero row zero.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from itertools import accumulate, chain

import numpy as np
import numpy.typing as npt

from .core.embedder_names import TFIDF_NGRAM_RANGE, tfidf_description
from .core.memo import batch_memoised

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]


# Characters that print nothing: format (zero-width space, byte-order mark, joiners),
# separators and controls. ``str.strip`` keeps the format ones, so a text of U+200B alone was
# a sentence to embed and to count as written.
_INVISIBLE = frozenset({"Cf", "Cc", "Zs", "Zl", "Zp"})


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: empty, or made only of invisible characters."""
    stripped = text.strip()
    if not stripped:
        return True
    # Most texts show their first character: one lookup decides (a batch asks of every
    # text it embeds, every sentence of a translation several times).
    if unicodedata.category(stripped[0]) not in _INVISIBLE:
        return False
    return all(unicodedata.category(char) in _INVISIBLE for char in stripped)


def normalise_rows(matrix: FloatArray) -> FloatArray:
    # What np.linalg.norm(matrix, axis=1, keepdims=True) computes, without its checks.
    norms = np.sqrt(np.add.reduce(matrix * matrix, axis=1, keepdims=True))
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

    def __init__(self, ngram_range: tuple[int, int] = TFIDF_NGRAM_RANGE) -> None:
        low, high = ngram_range
        if low < 1 or high < low:
            raise ValueError(f"ngram_range must satisfy 1 <= low <= high, got {ngram_range!r}")
        self.ngram_range = (low, high)
        self.description = tfidf_description(low, high)

    def embed(self, texts: Sequence[str]) -> FloatArray:
        return self.embed_groups([texts])[0]

    def embed_groups(self, groups: Sequence[Sequence[str]]) -> list[FloatArray]:
        """``[self.embed(texts) for texts in groups]``, bit for bit, in one pass over all
        the texts: each group is fitted on its own texts, but the n-grams of every distinct
        text are listed, sorted and counted once, however many groups hold it (a batch
        compares each case's transcript and truth with every model's output)."""
        cleaned = [["" if is_blank(text) else text for text in texts] for texts in groups]
        worded = [i for i, texts in enumerate(cleaned) if any(texts)]
        matrices: dict[int, FloatArray] = {}
        for run in _runs(worded, cleaned):
            matrices.update(zip(run, _tfidf_matrices([cleaned[i] for i in run],
                                                     self.ngram_range), strict=True))
        return [normalise_rows(matrices[i]) if i in matrices
                else np.zeros((len(texts), 1), dtype=np.float64)
                for i, texts in enumerate(cleaned)]


# Characters of distinct texts whose n-grams are sorted in one pass. A pass saves a call's
# fixed cost per group, but each of its groups marks its terms in an array over all of the
# pass's terms; on the example project's comparisons 12,000 to 30,000 characters a pass did
# alike. A text that groups of two passes share is listed in both: the recorded QA batch's
# 15,000 characters (transcripts beside each model's answers) cut at 12,000 listed four
# transcripts twice (7 % of the batch's instructions). Its terms (a few thousand) stay far
# below the 65,536 that sort by radix.
RUN_CHARACTERS = 20_000


def _runs(indices: list[int], groups: list[list[str]]) -> list[list[int]]:
    """``indices`` cut into consecutive runs whose groups hold at most ``RUN_CHARACTERS``
    characters of distinct texts, a larger group alone."""
    runs: list[list[int]] = []
    seen: set[str] = set()
    total = RUN_CHARACTERS
    for i in indices:
        fresh = set(groups[i]) - seen
        size = sum(map(len, fresh))
        if total + size > RUN_CHARACTERS:
            runs.append([])
            seen = set(groups[i])
            total = sum(map(len, seen))
        else:
            seen |= fresh
            total += size
        runs[-1].append(i)
    return runs


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


def _tfidf_matrices(groups: Sequence[Sequence[str]],
                    ngram_range: tuple[int, int]) -> list[FloatArray]:
    """For each group of documents, exactly what ``TfidfVectorizer(analyzer="char_wb",
    ngram_range=ngram_range, sublinear_tf=True).fit_transform(docs).toarray()`` returns,
    bit for bit, without its per-call overhead: the n-grams are numbered with numpy instead
    of a Python vocabulary, and the IDF and L2 norms are computed in scikit-learn's order
    with the same float operations (``tests/engine/test_embeddings.py`` compares the two).
    Every group must have a word."""
    if not groups:
        return []
    low, high = ngram_range
    # Each distinct text is listed once: its terms, their counts and their first places are
    # the same in every group that holds it.
    number = {text: i for i, text in enumerate(dict.fromkeys(chain.from_iterable(groups)))}
    texts = list(number)
    # The analyzer collapses runs of whitespace (``\s\s+``) before it splits on whitespace;
    # ``str.split()`` skips such runs itself, and ``\s`` and ``str.isspace`` are the same
    # characters, so splitting alone gives the same words.
    split = [text.lower().split() for text in texts]
    words = list(chain.from_iterable(split))
    if not words:
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    text_of_word = np.repeat(np.arange(len(texts)), [len(words) for words in split])
    new_term, listed, text_of_gram, per_word = _sorted_grams(words, text_of_word, low, high)
    # Where each text's n-grams begin in the analyzer's list, and how many it has.
    text_starts = np.concatenate(([0], np.cumsum(per_word)))[
        np.cumsum([0, *map(len, split)])]
    places = np.diff(text_starts).tolist()
    # The n-grams come sorted by text, then by place in the analyzer's list, which lists
    # the texts one after the other: those of a (term, text) pair are adjacent, the first
    # at the term's first place in the text, and every term begins a pair.
    new_pair = new_term.copy()
    new_pair[1:] |= text_of_gram[1:] != text_of_gram[:-1]
    starts = np.flatnonzero(new_pair)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = len(new_pair)
    tf = (ends - starts).astype(np.float64)
    np.log(tf, out=tf)
    tf += 1.0
    term = new_term[starts].cumsum() - 1
    pair_text = text_of_gram[starts]
    # Places counted from each text's first: a group's numbers stay small (see below).
    first_place = listed[starts] - text_starts[pair_text]
    # Each text's pairs, in term order: a stable sort by text, a radix sort for 16 bits.
    by_text = np.argsort(pair_text.astype(np.uint16 if len(texts) <= 1 << 16 else np.intp),
                         kind="stable")
    term, tf, first_place = term[by_text], tf[by_text], first_place[by_text]
    bounds = np.cumsum([0, *np.bincount(pair_text, minlength=len(texts)).tolist()]).tolist()
    return _group_rows(groups, number, bounds, places, term, tf, first_place,
                       int(np.count_nonzero(new_term)))


def _group_rows(groups: Sequence[Sequence[str]], number: dict[str, int], bounds: list[int],
                places: list[int], term: IntArray, tf: FloatArray, first_place: IntArray,
                terms: int) -> list[FloatArray]:
    """Each group's L2-normalised TF-IDF rows, from its texts' (term, text) pairs: text ``t``
    has pairs ``bounds[t]`` to ``bounds[t + 1]`` (terms numbered in string order below
    ``terms``, sublinear term frequencies, first places among its ``places[t]``).

    All the groups of a pass are worked out together, their documents one after another
    and their columns too (group by group, each's alphabetically): a few calls over every
    entry instead of a few dozen per group, whose fixed cost was most of a small group's."""
    doc_text = [number[doc] for docs in groups for doc in docs]
    lengths = [bounds[t + 1] - bounds[t] for t in doc_text]
    docs_of = [len(docs) for docs in groups]
    # A group's i-th document's places come after those of its documents before it,
    # whichever texts they are: numbered so, a short group's sightings sort by radix.
    before: list[int] = []
    for docs in groups:
        before.extend(accumulate([places[number[doc]] for doc in docs[:-1]], initial=0))
    # Each document's (term, text) pairs, its text's, one after another: slices copied.
    spans = [(bounds[t], bounds[t + 1]) for t in doc_text]
    doc_of_entry = np.repeat(np.arange(len(doc_text)), lengths)
    group_start = np.repeat(np.arange(0, len(groups) * terms, terms), docs_of)
    # Scikit-learn's columns are a group's terms in alphabetical order, as term numbers are.
    key = np.concatenate([term[a:b] for a, b in spans])
    key += np.repeat(group_start, lengths)
    present = np.zeros(len(groups) * terms, dtype=bool)
    present[key] = True
    column = np.cumsum(present)[key] - 1
    columns_of = np.count_nonzero(present.reshape(len(groups), terms), axis=1).tolist()
    first_column = list(accumulate(columns_of, initial=0))
    idf = np.bincount(column, minlength=first_column[-1]).astype(np.float64)
    idf += 1.0
    np.divide(np.repeat(np.array(docs_of, dtype=np.float64) + 1.0, columns_of), idf, out=idf)
    np.log(idf, out=idf)
    idf += 1.0
    weights = np.concatenate([tf[a:b] for a, b in spans])
    weights *= idf[column]
    # A term's first sighting in its group: its earliest document's, whose places are the
    # group's smallest.
    sightings = np.full(first_column[-1], np.iinfo(np.intp).max, dtype=np.intp)
    sighting = np.concatenate([first_place[a:b] for a, b in spans])
    sighting += np.repeat(np.array(before, dtype=np.intp), lengths)
    np.minimum.at(sightings, column, sighting)
    group_of_column = np.repeat(np.arange(len(groups)), columns_of)
    # Sightings are distinct within a group: every sort orders them alike, and 16 bits take
    # one radix pass (a stable one, then by group).
    if len(groups) <= 1 << 16 and int(sightings.max()) < 1 << 16:
        order = _radix_pass(sightings)
        order = order[_radix_pass(group_of_column[order])]
    else:
        order = np.lexsort((sightings, group_of_column))
    sighted = np.empty_like(order)
    sighted[order] = np.arange(len(order))
    sighted -= np.repeat(np.array(first_column[:-1], dtype=np.intp), columns_of)
    norms = _norms(weights * weights, doc_of_entry, sighted[column], docs_of, columns_of)
    # Each group's rows in one buffer, one after another: an entry goes to its row's start
    # less its group's first column, plus its column.
    row_starts: list[int] = []
    group_cells = list(accumulate((count * width for count, width
                                   in zip(docs_of, columns_of, strict=True)), initial=0))
    for count, width, start, first in zip(docs_of, columns_of, group_cells, first_column,
                                          strict=False):
        row_starts.extend(range(start - first, start - first + count * width, width))
    buffer = np.zeros(group_cells[-1], dtype=np.float64)
    buffer[np.repeat(np.array(row_starts, dtype=np.intp), lengths) + column] = (
        weights / np.repeat(norms, lengths))
    return [buffer[start:start + count * width].reshape(count, width)
            for count, width, start in zip(docs_of, columns_of, group_cells, strict=False)]


def _norms(squares: FloatArray, doc_of_entry: IntArray, place: IntArray, docs_of: list[int],
           columns_of: list[int]) -> FloatArray:
    """Each document's L2 norm, its squares ``squares`` (of document ``doc_of_entry[i]``,
    ``place[i]``-th of its group's columns by first sighting) added one by one in that order,
    as scikit-learn's row normalisation adds them: laid out so in rows, with zeros between
    them (which add nothing), a running sum adds them alike. Rows as wide as the widest
    group's of a stretch of groups, a stretch cut where that would double its cells."""
    norms = np.empty(sum(docs_of), dtype=np.float64)
    first_doc = 0
    stretches: list[tuple[int, int, int]] = []
    docs = width = cells = 0
    for group_docs, columns in zip(docs_of, columns_of, strict=True):
        wider = max(width, columns)
        if docs and (docs + group_docs) * wider > 2 * (cells + group_docs * columns):
            stretches.append((first_doc, docs, width))
            first_doc += docs
            docs = width = cells = 0
            wider = columns
        docs += group_docs
        width = wider
        cells += group_docs * columns
    stretches.append((first_doc, docs, width))
    bounds = np.searchsorted(doc_of_entry, [first for first, _, _ in stretches[1:]]).tolist()
    for (first, docs, width), start, stop in zip(stretches, [0, *bounds],
                                                 [*bounds, len(doc_of_entry)], strict=True):
        laid = np.zeros((docs, max(width, 1)), dtype=np.float64)
        laid.reshape(-1)[(doc_of_entry[start:stop] - first) * laid.shape[1]
                         + place[start:stop]] = squares[start:stop]
        norms[first:first + docs] = np.sqrt(np.cumsum(laid, axis=1)[:, -1])
    return norms


def _sorted_grams(words: Sequence[str], labels: IntArray, low: int,
                  high: int) -> tuple[BoolArray, IntArray, IntArray, IntArray]:
    """The character n-grams of ``words`` as scikit-learn's "char_wb" analyzer lists them
    (word by word, each padded with a space on either side, shorter n-grams first, left to
    right; a padded word shorter than ``low`` counts once, whole), sorted by their text in
    Python's string order and, within a text, by their place in that list.

    Returns for each n-gram in that order whether its term is new (the distinct texts in
    that order are the dense columns scikit-learn gives the terms, as it sorts its
    vocabulary alphabetically), its place (its index in the analyzer's list) and its
    word's label (of ``labels``, one per word); and how many n-grams each word has."""
    # A word's n-grams are the same wherever it stands, and a call's words repeat (the
    # example's four to six times over): only the distinct words' n-grams are sorted, and
    # each word's terms are then copied to its every place.
    number: dict[str, int] = {}
    of_word = np.fromiter([number.setdefault(word, len(number)) for word in words],
                          dtype=np.intp, count=len(words))
    term_at, per_distinct = _distinct_terms(list(number), low, high)
    per_word = per_distinct[of_word]
    # Each n-gram's place in the distinct words' list: its word's first place there, plus
    # its place in the analyzer's list less its word's first place in that list.
    source = np.arange(int(per_word.sum()), dtype=np.intp)
    source += np.repeat((np.cumsum(per_distinct) - per_distinct)[of_word]
                        - (np.cumsum(per_word) - per_word), per_word)
    terms = term_at[source]
    # Term numbers sort as the terms' texts do, and a stable sort keeps a term's places in
    # order: 16 bits take one radix pass.
    order = (_radix_pass(terms) if int(terms.max()) < 1 << 16
             else np.argsort(terms, kind="stable"))
    ordered = terms[order]
    new_term = np.empty(len(order), dtype=bool)
    new_term[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_term[1:])
    return new_term, order, np.repeat(labels, per_word)[order], per_word


def _distinct_terms(words: Sequence[str], low: int, high: int) -> tuple[IntArray, IntArray]:
    """For each n-gram of ``words`` in the analyzer's list (see :func:`_sorted_grams`), the
    number of its term in the terms' string order; and how many n-grams each word has."""
    lengths = np.fromiter(map(len, words), dtype=np.intp, count=len(words)) + 2
    # "surrogatepass": a lone surrogate (json.loads makes one of "\\ud800") is a character
    # like any other to the analyzer.
    code_points = np.frombuffer(f" {'  '.join(words)} ".encode("utf-32-le", "surrogatepass"),
                                dtype=np.uint32)
    run = len(code_points)
    word = np.repeat(np.arange(len(words)), lengths)
    word_starts = np.cumsum(lengths) - lengths
    # A word's n-grams of each size, and where in the analyzer's list they begin: after
    # the earlier words' and its own shorter ones.
    sizes = range(low, high + 1)
    counts = [np.maximum(lengths - (n - 1), 0) for n in sizes]
    short = np.flatnonzero(lengths < low)
    per_word = np.add.reduce(counts)
    per_word[short] += 1
    total = int(per_word.sum())
    offsets = np.cumsum(per_word) - per_word
    short_places = offsets[short]
    # An n-gram of n characters from p lies in one padded word: the word of p and of p+n-1.
    # A run shorter than n has no such p.
    placed = []
    for n, count in zip(sizes, counts, strict=True):
        starts = np.flatnonzero(word[:max(run - n + 1, 0)] == word[n - 1:])
        places = (offsets - word_starts)[word[starts]]
        places += starts
        offsets += count
        placed.append((n, starts, places))
    # Each character becomes its rank in the call's alphabet, from 1: 0 stands for "no
    # character" (past the end of the run), so an n-gram sorts before the longer ones it
    # begins, as in string order.
    top = int(code_points.max())
    if top < 1 << 16:
        rank_of = np.cumsum(np.bincount(code_points, minlength=top + 1) > 0, dtype=np.uint64)
    else:
        # The distinct characters, sorted: np.unique's answer, several times faster here.
        alphabet = np.sort(code_points)
        alphabet = alphabet[np.concatenate(([True], alphabet[1:] != alphabet[:-1]))]
        rank_of = np.zeros(top + 1, dtype=np.uint64)
        rank_of[alphabet] = np.arange(1, len(alphabet) + 1, dtype=np.uint64)
    numbers = np.zeros(run + high, dtype=np.uint64)
    numbers[:run] = rank_of[code_points]
    bits = int(numbers.max()).bit_length()
    # As many characters as fit in each of several 64-bit keys, laid out in the analyzer's
    # order; a stable sort by each key's 16-bit digits, the last digit of the last key
    # first, then orders by text and, within a text, by place.
    per_key = min(64 // bits, high)
    keys = []
    for first in range(0, high, per_key):
        chars = min(per_key, high - first)
        packed = _prefixes(numbers, run, bits, first, chars, per_key)
        key = np.empty(total, dtype=np.uint64)
        for n, starts, places in placed:
            key[places] = packed[min(max(n - first, 0), chars), starts]
        key[short_places] = packed[np.clip(lengths[short] - first, 0, chars),
                                   word_starts[short]]
        keys.append((key, bits * (per_key - chars), bits * per_key))
    passes = [(key, np.uint64(shift)) for key, lowest, highest in reversed(keys)
              for shift in range(lowest, highest, 16)]
    order = _radix_pass(passes[0][0] >> passes[0][1])
    for key, shift in passes[1:]:
        order = order[_radix_pass(key[order] >> shift)]
    new_term = np.zeros(total, dtype=bool)
    new_term[0] = True
    for key, _, _ in keys:
        ordered = key[order]
        new_term[1:] |= ordered[1:] != ordered[:-1]
    term_at = np.empty(total, dtype=np.intp)
    term_at[order] = np.cumsum(new_term) - 1
    return term_at, per_word


def _radix_pass(numbers: npt.NDArray[np.uint64] | IntArray) -> IntArray:
    """The stable order of ``numbers``' lowest 16 bits: numpy sorts 16-bit numbers stably
    by radix, in time linear in their count."""
    return np.argsort(numbers.astype(np.uint16), kind="stable")


def _prefixes(numbers: npt.NDArray[np.uint64], run: int, bits: int, first: int, chars: int,
              per_key: int) -> npt.NDArray[np.uint64]:
    """``packed[m][p]`` for ``p`` below ``run``: the numbers of the characters from
    ``p + first`` to ``p + first + m - 1`` (``m`` up to ``chars``), ``bits`` each, the
    first in the highest bits of a key of ``per_key`` characters."""
    packed = np.zeros((chars + 1, run), dtype=np.uint64)
    for k in range(chars):
        np.bitwise_or(packed[k], numbers[first + k:first + k + run]
                      << np.uint64(bits * (per_key - 1 - k)), out=packed[k + 1])
    return packed


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
