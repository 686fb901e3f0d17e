"""The assertive claims of an answer and their check against the context (seed 003's
claim-based verification): the fact verbs and hedges that make or take back a claim, the
subject–verb–object reading of a sentence, whether a text is English enough to be read so,
and the word forms by which a claim's words meet a passage's."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ..anchor_units import figure_word, figures_written_out
from ..core.memo import batch_memoised
from ..lexicon import ENGLISH_STOPWORDS, NON_ENGLISH_STOPWORDS
from ..text import content_tokens, dominant_script, tokens

CLAIM_WINDOW = 12

# Verbs that state a fact, and words that turn a statement into a guess. Each verb in every
# form a statement puts it in: with only "gets" and "offers", "Premium members get free
# overnight shipping" made no claim where "A premium member gets …" made one, and the plural
# subject's invention passed.
_FACT_VERB_TEXT = """
    is are was were  has have had  get gets got  cost costs  take takes took
    include includes included  release releases released  launch launches launched
    offer offers offered  provide provides provided  require requires required
    charge charges charged  ship ships shipped  arrive arrives arrived  open opens opened
    close closes closed  expire expires expired  cover covers covered
    contain contains contained  support supports supported  allow allows allowed
    receive receives received  send sends sent  transfer transfers transferred
    refund refunds refunded  start starts started  end ends ended  come comes came
    process processes processed  approve approves approved  deny denies denied
    pay pays paid  deliver delivers delivered  waive waives waived
    reimburse reimburses reimbursed  cancel cancels cancelled canceled
    renew renews renewed  accept accepts accepted  give gives gave  apply applies applied
    qualify qualifies qualified  earn earns earned  guarantee guarantees guaranteed
"""
_HEDGE_TEXT = """
    may might could possibly perhaps probably likely suggests suggest suggested seems seem
    seemed appears appear maybe believe think guess unsure unclear
"""
FACT_VERBS = frozenset(_FACT_VERB_TEXT.split())
HEDGES = frozenset(_HEDGE_TEXT.split())
# Who spoke is not a fact to find in the context: a transcript never calls its speakers
# "the customer" or "the agent".
PARTICIPANTS = frozenset({"customer", "caller", "agent", "user", "client", "representative",
                          "assistant"})
# Not a claim's object, but for a participle alone.
_NOT_OBJECT = FACT_VERBS | PARTICIPANTS
# Fact verbs that take a participle after them as one verb ("is included", "got approved").
_AUXILIARIES = frozenset({"is", "are", "was", "were", "has", "have", "had", "get", "gets", "got"})
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
# A clause led by a conjunction after a comma ("…, but you could appeal"): a hedge there is
# not the first clause's.
_CLAUSE = re.compile(r",\s*(?=(?:but|and|or|so|yet|although|though|while|whereas)\b)",
                     re.IGNORECASE)
# Words that end a claim's object: what follows a preposition or a conjunction qualifies the
# value rather than being it ("89.99 for items over 10 lbs").
_OBJECT_ENDS = frozenset({
    "for", "to", "in", "on", "at", "with", "over", "under", "by", "from", "of", "per", "and",
    "but", "or", "which", "that", "while", "if", "when", "because", "since", "until", "after",
    "before", "than", "within", "without"})
_WORD = re.compile(r"\w+")
# Words that open an answer without naming anything ("Yes, you get free shipping"): read as
# its subject, "yes" was the claim's only subject word (you is a stopword), no context has
# it, and a grounded answer failed with the blocker. Those that may also name a thing ("Well
# water", "Right of return") only with a mark after them. "No" names nothing either (it is a
# stopword): an answer's negation is not read, with or without it.
_OPENING = re.compile(
    r"^\s*(?:(?:(?:yes|yeah|yep|yup|no|nope|ok|okay|sure|of\s+course|certainly|absolutely"
    r"|definitely|indeed)\b|(?:well|right|alright|great)(?=\s*[,.!:;\u2014-]))[\s,.!:;\u2014-]*)+",
    re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    """An assertive subject–verb–object claim."""

    subject: tuple[str, ...]
    verb: str
    object: tuple[str, ...]
    sentence: str


# Words whose final "s" is no plural ending: cut, they would read as another word ("new").
_NOT_PLURAL = frozenset({"news", "series", "species", "lens", "always", "perhaps", "whereas",
                         "does"})
# A plural takes "es" after these endings (boxes, buzzes, branches, wishes, classes); other
# words only add "s", so "prices" is "price", "sizes" "size" and "houses" "house".
_ES_AFTER = ("x", "zz", "ch", "sh", "ss", "us")
_CONSONANTS = frozenset("bcdfghjklmnpqrstvwxz")


def _singular(word: str) -> str:
    if word in _NOT_PLURAL or len(word) <= 3 or not word.endswith("s"):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("es") and word[:-2].endswith(_ES_AFTER) and len(word) > 4:
        return word[:-2]
    # "ss", "us", "is" end singular words (class, status, basis).
    return word if word.endswith(("ss", "us", "is")) else word[:-1]


# A word's stem is the same wherever it occurs: worked out once per word (a few suffix
# tests per word of every answer cost the family ~2 %).
@functools.lru_cache(maxsize=8192)
def word_stem(word: str) -> str:
    """The word without a tense or plural ending, so that singular and plural meet
    ("price"/"prices", "box"/"boxes", "fee"/"fees", "policy"/"policies"), and a verb's
    forms ("charge"/"charged"/"charging", "ship"/"shipped", "deny"/"denied"). Without a
    dictionary the base form's e cannot be put back, so every stem of five letters or more
    loses a final e ("charge" and "charged" meet at "charg"), and a doubled final consonant
    is made single ("shipp" of "shipped" is "ship"; "call" and "called" meet at "cal")."""
    for suffix in ("ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            if suffix == "ed" and word.endswith("i"):
                word = word[:-1] + "y"
            break
    else:
        word = _singular(word)
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    # Consonant letters only: "1000" is no "100".
    if len(word) > 3 and word[-1] == word[-2] and word[-1] in _CONSONANTS:
        word = word[:-1]
    return word


def reads_as_english(text: str) -> bool:
    """Whether :func:`extract_claims` can read ``text``: its fact verbs and hedges are English
    words, so in another language it finds no claim, and 0 unsupported of 0 anchors would
    read as fully grounded. A text is English unless most of its letters are of a script
    other than Latin, or more of its words are function words of another language of the
    lexicon (Spanish, French, German, Portuguese, Italian, Hindi) than English ones ("el",
    "und" against "the", "is"); a text with neither kind is read as English. Unsure, it
    says not English: the hallucination is then not scored, where a misread answer in
    another language would pass with no claim found."""
    if not text.isascii() and dominant_script(text) not in (None, "LATIN"):
        return False
    words = tokens(text)
    english = sum(1 for w in words if w in ENGLISH_STOPWORDS)
    return sum(1 for w in words if w in NON_ENGLISH_STOPWORDS) <= english


def extract_claims(text: str) -> list[Claim]:
    """One claim per sentence: the first fact verb (:func:`_verb_at`) of its first clause
    that has one and no hedge word, with up to three content words before it as subject
    (words naming the call's participants aside) and the content words after it, up to the
    first preposition or conjunction, as object ("costs 89.99 for items over 10 lbs": 89.99).
    A fact verb's participle is no object ("was launched in March": March) unless it is all
    there is ("the refund status is denied": denied). A hedged clause makes no claim, and a
    hedge in another clause ("…, but you could appeal") does not take back this one's. The
    words that open an answer ("Yes,", "Sure,", "Of course") are no subject: with none left,
    the sentence makes no claim."""
    claims = []
    for sentence in _SENTENCE.split(text):
        for clause in _CLAUSE.split(_OPENING.sub("", sentence)):
            words = tokens(figures_written_out(clause))
            verb_at = _verb_at(words)
            if verb_at is None or _hedged(clause):
                continue
            before = [w for w in content_tokens(" ".join(words[:verb_at]))
                      if w not in PARTICIPANTS]
            rest = words[verb_at + 1:]
            stop = next((i for i, w in enumerate(rest) if w in _OBJECT_ENDS), len(rest))
            after = (_object_words(rest[:stop], _NOT_OBJECT) or _object_words(rest, _NOT_OBJECT)
                     or _object_words(rest, PARTICIPANTS))
            if before and after:
                claims.append(Claim(tuple(before[-3:]), words[verb_at], tuple(after[:3]),
                                    sentence.strip()))
            break
    return claims


def _verb_at(words: Sequence[str]) -> int | None:
    """Where the clause's fact verb is: its first fact-verb form read as a verb. Many forms
    also name a thing ("refund", "costs", "charges"), so one with no content word before
    it, which leaves it no subject ("Refunds usually take 5 days", "The cost is $5"), or
    followed straight by another fact verb ("Shipping costs are $5") is read as a noun of
    the subject, unless it is an auxiliary ("is included"). Read as the verb, such a noun
    made no claim, or took the subject's own word for the object."""
    named = False
    for i, word in enumerate(words):
        if word in FACT_VERBS and named and (
                word in _AUXILIARIES or i + 1 == len(words) or words[i + 1] not in FACT_VERBS):
            return i
        # An auxiliary names nothing: counted as the subject, "You got approved" claimed
        # that "got" was approved, a word no context holds.
        named = named or (word not in _AUXILIARIES and bool(content_tokens(word)))
    return None


def _object_words(words: Sequence[str], skip: frozenset[str]) -> list[str]:
    return [w for w in content_tokens(" ".join(words)) if w not in skip]


def _hedged(sentence: str) -> bool:
    """Whether ``sentence`` holds a hedge word (its tokens, normalised). "May" with a capital
    inside a sentence is the month ("free hardware since May"), not the modal: read as a
    hedge, it took back the claim, and a made-up one passed."""
    hedges = {w for w in tokens(sentence) if w in HEDGES}
    if hedges != {"may"}:
        return bool(hedges)
    written = _WORD.findall(unicodedata.normalize("NFKC", sentence))
    return any(w.lower() == "may" and not (w == "May" and i > 0) for i, w in enumerate(written))



def as_passages(context: str | Sequence[str]) -> list[str]:
    """The context as a list of passages; a single string is one passage."""
    return [context] if isinstance(context, str) else list(context)


def claim_supported(
    claim: Claim, context: str | Sequence[str], window: int = CLAIM_WINDOW
) -> bool:
    """Whether a subject word and an object word occur within ``window`` words of each other
    inside one passage of the context (words compared after light stemming, a figure by the
    amount it writes: "$25.00", "1,540", "$2k" and ".5%" are the "$25", "1540", "$2,000"
    and "0.5%" of a passage).

    Passages are separate texts, so a subject at the end of one and an object at the start
    of the next are not close: that would let two unrelated passages support a claim.
    """
    subject = {claim_word(w) for w in claim.subject}
    obj = {claim_word(w) for w in claim.object}
    for passage in as_passages(context):
        words = claim_words(passage)
        s_pos = [i for i, w in enumerate(words) if w in subject]
        o_pos = [i for i, w in enumerate(words) if w in obj]
        if any(abs(i - j) <= window for i in s_pos for j in o_pos):
            return True
    return False


@batch_memoised
def claim_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` as a claim's are compared: stemmed, a figure as its amount.
    Remembered for the batch: every claim of every answer reads the same passages."""
    return tuple(claim_word(w) for w in tokens(figures_written_out(text)))


# A word's stem is the same in every claim and passage: worked out once per word.
@functools.lru_cache(maxsize=8192)
def claim_word(word: str) -> str:
    return word_stem(figure_word(word))
