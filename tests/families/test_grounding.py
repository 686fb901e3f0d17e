"""The grounding family (seed 003): relevance, completeness, anchors, drift, the verdict."""

from __future__ import annotations

from typing import Any

import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.loading import CaseFileError, load_case_file
from pytest_callqa.engine.tasks.grounding import (
    DRIFT_PENALTY,
    SECTION_HALLUCINATION_THRESHOLD,
    claim_supported,
    completeness,
    drift_penalty,
    extract_claims,
    hallucination,
    ngram_overlap,
    query_keywords,
    reads_as_english,
    relevance,
    verdict,
)
from tests.engine.helpers import TFIDF, make_case

from .helpers import write_case

CONTEXT = ("The rate is 39.99 for items 5 lbs or less. And 54.99 for items of 10 lbs or less "
           "and 69.99 for items over that. Overnight shipping was launched on March 3, 2021.")
QUERY = "How much does overnight shipping cost for items over 10 lbs?"
ANSWER = "Overnight shipping for items over 10 lbs costs 69.99."


def _case(config: dict[str, Any] | None = None, transcript: Any = None) -> Any:
    return make_case("grounding", {"answer": ANSWER},
                     config=config or {"query": QUERY, "context": [CONTEXT]},
                     transcript=transcript if transcript is not None else "agent: hello there")


def _eval(answer: str, **case: Any) -> Any:
    return evaluate(_case(**case), {"answer": answer}, embedder=TFIDF)


# --- the scores --------------------------------------------------------------------------------


def test_relevance_is_the_mean_of_tfidf_cosine_and_token_jaccard() -> None:
    q, r = "refund status for my order", "the refund for your order is in progress"
    matrix = TfidfVectorizer().fit_transform([q, r])
    cosine = float((matrix[0] @ matrix[1].T).toarray()[0, 0])
    jaccard = 3 / 10  # {refund, for, order} of {refund, status, for, my, order, the, your,
    #                    is, in, progress}
    score, got_cosine, got_jaccard = relevance(q, r)
    assert got_cosine == pytest.approx(cosine)
    assert got_jaccard == pytest.approx(jaccard)
    assert score == pytest.approx((cosine + jaccard) / 2)


def test_relevance_of_unrelated_or_empty_answers_is_zero() -> None:
    assert relevance("refund status", "bananas are yellow")[0] == 0.0
    assert relevance("refund status", "")[0] == 0.0
    assert relevance("?", "!")[0] == 0.0


def test_completeness_over_query_keywords() -> None:
    assert query_keywords(QUERY) == ["overnight", "shipping", "cost", "items", "10", "lbs"]
    assert completeness(QUERY, ANSWER) == (1.0, [])
    score, missing = completeness(QUERY, "Overnight shipping costs 69.99.")
    assert score == pytest.approx(3 / 6) and missing == ["items", "10", "lbs"]
    assert completeness("What?", "anything") == (1.0, [])



@pytest.mark.parametrize(("query_word", "answer_word"), [
    ("prices", "price"), ("price", "prices"), ("boxes", "box"), ("sizes", "size"),
    ("fees", "fee"), ("taxes", "tax"), ("policies", "policy"), ("classes", "class"),
    ("branches", "branch"), ("houses", "house"), ("costs", "cost"), ("shipping", "shipped"),
    ("statuses", "status"), ("bonuses", "bonus"), ("causes", "cause"), ("uses", "use"),
])
def test_a_keyword_counts_up_to_a_plural_ending(query_word: str, answer_word: str) -> None:
    # Before, "prices" stemmed to "pric" and "boxes" to "boxe" while "price" and "box" kept
    # their "e" or had none: the answer said the keyword and completeness missed it.
    assert completeness(f"Which {query_word} apply?", f"The {answer_word} apply.") == (1.0, [])


@pytest.mark.parametrize(("query_word", "answer_word"), [
    ("news", "new"), ("care", "car"), ("note", "not"), ("status", "state"), ("basis", "base"),
    ("1000", "100"),
])
def test_unrelated_words_do_not_meet_at_a_stem(query_word: str, answer_word: str) -> None:
    assert completeness(f"Which {query_word} apply?", f"The {answer_word} apply.") == (
        0.5, [query_word])

def test_numeric_and_date_anchors_are_checked_against_the_context() -> None:
    check = hallucination("It costs $69.99 since 3 March 2021, not 79.99.", CONTEXT)
    kinds = [(a["kind"], a["text"], a["supported"]) for a in check.anchors]
    assert ("numeric", "$69.99", True) in kinds
    assert ("date", "3 March 2021", True) in kinds
    assert ("numeric", "79.99", False) in kinds


def test_assertive_claims_need_subject_and_object_close_together() -> None:
    claims = extract_claims("Overnight shipping was launched in March. It may include "
                            "insurance. Premium support includes free returns.")
    assert [(c.subject, c.verb, c.object) for c in claims] == [
        # Fact verbs are not objects: "was launched in March" keeps "march".
        (("overnight", "shipping"), "was", ("march",)),
        (("premium", "support"), "includes", ("free", "returns")),
    ]
    assert claim_supported(claims[0], CONTEXT)
    assert not claim_supported(claims[1], CONTEXT)
    far = "Overnight trips are fun. " + "word " * 20 + "In March it rained."
    assert not claim_supported(claims[0], far)


@pytest.mark.parametrize(("answer", "supported"), [
    # A status given by a fact verb's participle made no claim (the participle was no
    # object): "denied" against an approved refund passed at hallucination 0.
    ("Your refund status is denied.", False),
    ("Your refund status is approved.", True),
    # A hedge in another clause took the claim back.
    ("Your refund status is declined, but you could appeal.", False),
])
def test_a_status_stated_by_a_participle_is_a_claim(answer: str, supported: bool) -> None:
    context = "Your refund status is approved; the money goes back to your credit card."
    (claim,) = extract_claims(answer)
    assert claim.subject == ("refund", "status") and len(claim.object) == 1
    assert claim_supported(claim, context) is supported


@pytest.mark.parametrize("answer", [
    "Overnight shipping costs 89.99 for items over 10 lbs.",
    "Overnight shipping costs $89.99, and standard shipping is free.",
    "Overnight shipping for items over 10 lbs costs 89.99.",
])
def test_a_claims_object_ends_where_its_value_does(answer: str) -> None:
    # The object ran on past the value ("89.99 items 10"), and "shipping" near "items" in the
    # context supported a wrong price: the word order decided the verdict.
    (claim,) = extract_claims(answer)
    assert claim.object == ("89.99",)
    assert not claim_supported(claim, "Overnight shipping costs 69.99 for items over 10 lbs.")


# A passage on overnight shipping next to one on returns: each is a separate text.
SHIPPING = "Overnight shipping costs 69.99 for items over 10 lbs."
RETURNS = "Free returns are accepted within 30 days of delivery."
SPLIT_CLAIM = "Overnight shipping includes free returns."



def test_the_month_may_is_no_hedge() -> None:
    # "since May" read as the modal "may" took the claim back, and a made-up one passed.
    (claim,) = extract_claims("The premium plan includes free hardware since May.")
    assert claim.verb == "includes" and claim.subject == ("premium", "plan")
    assert extract_claims("May I say the plan includes hardware? It may include a modem.") == []
    # Hedges are read normalised, as before: a soft hyphen or full-width letters hide none.
    assert extract_claims("The plan mi\u00adght include free hardware.") == []
    assert extract_claims("The plan \uff4d\uff49\uff47\uff48\uff54 include free hardware.") == []

OVERNIGHT = "Overnight shipping for items over 10 lbs costs $69.99. Standard shipping is free."


@pytest.mark.parametrize("answer", [
    "Premium members get free overnight shipping.",
    "A premium member gets free overnight shipping.",
    "All premium plans offer free overnight shipping.",
    "The premium plan offers free overnight shipping.",
    "Premium members receive free overnight shipping.",
    "A premium member received free overnight shipping.",
    "Premium members will receive free overnight shipping.",
])
def test_a_claim_is_made_whatever_the_subjects_number(answer: str) -> None:
    # Only the third-person form of most fact verbs was known: a plural subject's invented
    # claim ("members get") made none, and the answer passed at hallucination 0.
    (claim,) = extract_claims(answer)
    assert claim.object == ("free", "overnight", "shipping")
    result = _eval(answer, config={"query": "Do premium members get free overnight shipping?",
                                   "context": [OVERNIGHT]})
    assert result.metrics["hallucination"].value == 1.0
    assert result.metrics["grounding_verdict"].details["verdict"] == "FAIL"


@pytest.mark.parametrize(("answer", "verb"), [
    ("The bank approves every loan application.", "approves"),
    ("Banks approve every loan application.", "approve"),
    ("The bank refunds the application fee.", "refunds"),
    ("Banks refund the application fee.", "refund"),
    ("The warehouse processes orders on Sunday.", "processes"),
    ("Warehouses process orders on Sunday.", "process"),
    ("The store sends a confirmation email.", "sends"),
    ("Stores send a confirmation email.", "send"),
    ("Orders ship within 24 hours.", "ship"),
    ("Packages arrive in 3 days.", "arrive"),
    ("Plans cover water damage.", "cover"),
    ("Members pay $10 a month.", "pay"),
])
def test_customer_service_verbs_state_facts(answer: str, verb: str) -> None:
    (claim,) = extract_claims(answer)
    assert claim.verb == verb


def test_a_hedged_verb_in_any_form_makes_no_claim() -> None:
    assert extract_claims("Premium members may get free overnight shipping.") == []
    assert extract_claims("Premium plans might offer free overnight shipping.") == []


@pytest.mark.parametrize(("answer", "subject", "verb", "obj"), [
    # A fact verb's form that names a thing is the subject's noun: with no word before it,
    # or followed straight by another fact verb, it is no verb.
    ("The cost is $5.", ("cost",), "is", ("5",)),
    ("Shipping costs are $5.", ("shipping", "costs"), "are", ("5",)),
    ("Refunds usually take 5 days.", ("refunds", "usually"), "take", ("5", "days")),
    ("The refund amount is $50.", ("refund", "amount"), "is", ("50",)),
    ("Your refund was sent to your card.", ("refund",), "was", ("card",)),
    ("Shipping is included.", ("shipping",), "is", ("included",)),
])
def test_a_fact_verb_naming_a_thing_is_read_as_a_noun(
        answer: str, subject: tuple[str, ...], verb: str, obj: tuple[str, ...]) -> None:
    (claim,) = extract_claims(answer)
    assert (claim.subject, claim.verb, claim.object) == (subject, verb, obj)


@pytest.mark.parametrize("answer", [
    "You got approved for a refund.", "He got a refund of $50.",
    "You get refunded within 5 days."])
def test_an_auxiliary_after_a_pronoun_is_no_subject(answer: str) -> None:
    # "got" named the subject once a fact verb followed it: "You got approved for a refund"
    # claimed that "got" was approved, which no context says — a blocker for a right answer.
    assert extract_claims(answer) == []
    context = ("Your refund request was approved. A refund of $50 was issued to your card "
               "today, and refunds reach the card within 5 days.")
    assert hallucination(answer, [context]).claims_score == 0.0


def test_a_claim_is_supported_only_within_one_passage() -> None:
    (claim,) = extract_claims(SPLIT_CLAIM)
    assert (claim.subject, claim.object) == (("overnight", "shipping"), ("free", "returns"))
    # Subject and object are 8 words apart across the passage boundary, inside the window,
    # yet no passage holds both.
    assert not claim_supported(claim, [SHIPPING, RETURNS])
    assert claim_supported(claim, [f"{SHIPPING} {RETURNS}"])
    assert claim_supported(claim, f"{SHIPPING} {RETURNS}")
    check = hallucination(SPLIT_CLAIM, [SHIPPING, RETURNS])
    assert [(a["kind"], a["supported"]) for a in check.anchors] == [("claim", False)]
    assert check.claims_score == 1.0
    assert hallucination(SPLIT_CLAIM, [f"{SHIPPING} {RETURNS}"]).claims_score == 0.0


def test_numbers_and_ngrams_are_read_passage_by_passage() -> None:
    # A number is supported by any passage; a bigram never spans two passages.
    check = hallucination("Returns within 30 days; items over 10 lbs.", [SHIPPING, RETURNS])
    assert [a["supported"] for a in check.anchors if a["kind"] != "claim"] == [True, True]
    assert ngram_overlap("lbs free", [SHIPPING, RETURNS]) == 0.0
    assert ngram_overlap("lbs free", f"{SHIPPING} {RETURNS}") == 1.0


def test_the_task_keeps_config_passages_apart() -> None:
    query = "Does overnight shipping include free returns?"
    split = _eval(SPLIT_CLAIM, config={"query": query, "context": [SHIPPING, RETURNS]})
    assert split.metrics["hallucination"].value == 1.0
    assert split.metrics["grounding_verdict"].details["verdict"] == "FAIL"
    assert split.blockers == ["hallucination"]
    joined = _eval(SPLIT_CLAIM, config={"query": query, "context": [f"{SHIPPING} {RETURNS}"]})
    assert joined.metrics["hallucination"].value == 0.0
    assert not joined.blocked


def test_a_transcript_context_is_one_passage() -> None:
    # Turns of one call are one conversation: a claim may draw on neighbouring turns.
    transcript = [{"speaker": "agent", "text": SHIPPING},
                  {"speaker": "agent", "text": RETURNS}]
    result = _eval(SPLIT_CLAIM, config={"query": "Does overnight shipping include free "
                                        "returns?"}, transcript=transcript)
    assert result.metrics["hallucination"].value == 0.0


def test_hallucination_is_the_share_of_unsupported_anchors() -> None:
    check = hallucination("Overnight shipping was launched on March 3, 2021. "
                          "Items over 20 lbs cost 89.99.", CONTEXT)
    assert [(a["kind"], a["text"], a["supported"]) for a in check.anchors] == [
        ("date", "March 3, 2021", True),
        ("numeric", "20", False),
        ("numeric", "89.99", False),
        ("claim", "Overnight shipping was launched on March 3, 2021.", True),
        ("claim", "Items over 20 lbs cost 89.99.", False),
    ]
    # 3 of the 5 anchors are unsupported (2 of 5 supported: a swap would read 0.4); the
    # answer stays on topic, so there is no drift penalty and the score is the share.
    assert check.claims_score == pytest.approx(0.6)
    assert check.drift == 0.0
    assert check.score == pytest.approx(0.6)


LATE_FEE = "The late fee is $25 per missed payment."


@pytest.mark.parametrize("answer", [
    "The late fee is 25%.", "The late fee is 25 percent.", "The late fee is 25 euros.",
    "The late fee is £25.", "The late fee is 30%.", "The late fee is $250.",
    "The late fee is 25.00%.", "The late fee is 2,500.",
])
def test_a_figure_of_another_kind_or_currency_is_not_the_contexts(answer: str) -> None:
    # By value alone, "25%" and "25 euros" were backed by the $25 fee, and the word 25 near
    # "late fee" backed the claim: hallucination 0, PASS.
    result = _eval(answer, config={"query": "What is the late fee?", "context": [LATE_FEE]})
    anchors = result.metrics["hallucination"].details["anchors"]
    assert [(a["kind"], a["supported"]) for a in anchors] == [("numeric", False),
                                                              ("claim", False)]
    assert result.metrics["hallucination"].value == 1.0
    assert result.metrics["grounding_verdict"].details["verdict"] == "FAIL"


@pytest.mark.parametrize("answer", [
    "The late fee is $25.", "The late fee is 25 dollars.", "The late fee is 25 USD.",
    "The late fee is USD 25.", "The late fee is US$25.", "The late fee is 25.",
])
def test_the_same_amount_in_another_format_is_the_contexts(answer: str) -> None:
    check = hallucination(answer, LATE_FEE)
    assert [(a["kind"], a["supported"]) for a in check.anchors] == [("numeric", True),
                                                                    ("claim", True)]
    assert check.claims_score == 0.0


@pytest.mark.parametrize(("answer", "passage"), [
    ("The late fee is $25.00.", LATE_FEE),
    ("The late fee is $25.", "The late fee is $25.00 per missed payment."),
    ("Your balance is 1,540.", "Your balance is 1540 after the transfer."),
    ("Your balance is 1540.", "Your balance is 1,540.00 after the transfer."),
    ("Your balance is 12,00,000.", "Your balance is 1200000 after the transfer."),
])
def test_a_claims_figure_written_another_way_is_the_passages_word(answer: str,
                                                                   passage: str) -> None:
    # The figure was backed by value, but the claim compared "25.00" with "25" and "1,540"
    # with "1540" as different words: unsupported, hallucination 0.5 for a grounded answer.
    result = _eval(answer, config={"query": "What is it?", "context": [passage]})
    hall = result.metrics["hallucination"]
    assert [(a["kind"], a["supported"]) for a in hall.details["anchors"]] == [
        ("numeric", True), ("claim", True)]
    assert hall.value == 0.0


def test_a_figure_only_an_unmapped_word_tells_apart_is_left_out() -> None:
    # "25 points" may or may not be the $25: neither supported nor unsupported.
    result = _eval("The late fee is 25 points.",
                   config={"query": "What is the late fee?", "context": [LATE_FEE]})
    hall = result.metrics["hallucination"]
    assert [(a["kind"], a["supported"]) for a in hall.details["anchors"]] == [
        ("numeric", None), ("claim", True)]
    assert (hall.value, hall.details["numerator"], hall.details["denominator"]) == (0.0, 0, 1)
    assert "undecided, left out" in hall.reason and "'25'" in hall.reason


@pytest.mark.parametrize(("overlap", "penalty"), [(0.0, 0.2), (0.19, 0.2), (0.2, 0.0),
                                                  (0.9, 0.0)])
def test_drift_gate(overlap: float, penalty: float) -> None:
    assert drift_penalty(overlap) == penalty


def test_drift_penalty_sets_a_floor_for_off_topic_answers() -> None:
    check = hallucination("Bananas taste sweet", CONTEXT)
    assert check.anchors == [] and check.claims_score == 0.0
    assert ngram_overlap("Bananas taste sweet", CONTEXT) == 0.0
    assert check.score == DRIFT_PENALTY
    on_topic = hallucination("for items of 10 lbs or less", CONTEXT)
    assert on_topic.drift == 0.0


# --- the verdict -------------------------------------------------------------------------------


@pytest.mark.parametrize(("hall", "rel", "comp", "expected"), [
    (0.6, 0.9, 1.0, "FAIL"),     # safety first, even with a relevant, complete answer
    (0.51, 0.9, 1.0, "FAIL"),    # the verdict's 0.5 stands over the section's 0.6
    (0.5, 0.9, 1.0, "PASS"),     # not above 0.5
    (0.9, 0.05, 0.1, "FAIL"),    # hallucination is named first
    (0.0, 0.09, 1.0, "FAIL"),    # irrelevant
    (0.0, 0.05, 0.1, "FAIL"),    # relevance before completeness
    (0.0, 0.1, 0.59, "WARN"),
    (0.2, 0.1, 0.6, "PASS"),
])
def test_verdict_order(hall: float, rel: float, comp: float, expected: str) -> None:
    decided, why = verdict(hall, rel, comp)
    assert decided == expected
    if hall > 0.5:
        assert why.startswith("hallucination")
    elif rel < 0.1:
        assert why.startswith("relevance")


@pytest.mark.parametrize(("comp", "would_be"), [(1.0, "PASS"), (0.5, "WARN")])
def test_an_unchecked_hallucination_leaves_the_verdict_undecided(
        comp: float, would_be: str) -> None:
    decided, why = verdict(None, 0.9, comp)
    assert decided is None
    assert why == ("undecided: hallucination not scored, and the verdict checks it first; "
                   f"relevance and completeness alone would give {would_be}")
    # FAIL whatever the hallucination: an irrelevant answer is decided.
    assert verdict(None, 0.05, 1.0) == ("FAIL", "relevance 0.05 < 0.1 (irrelevant)")


def test_the_sections_0_6_is_not_the_verdict_threshold() -> None:
    assert SECTION_HALLUCINATION_THRESHOLD == 0.6
    assert verdict(0.55, 1.0, 1.0)[0] == "FAIL"


@pytest.mark.parametrize(("answer", "decided", "score"), [
    (ANSWER, "PASS", 1.0),
    ("Overnight shipping costs 69.99.", "WARN", 0.5),
    ("Overnight shipping for items over 10 lbs costs $89.99 since 2019.", "FAIL", 0.0),
    ("Bananas are yellow.", "FAIL", 0.0),
    ("", "FAIL", 0.0),
])
def test_task_score_maps_the_verdict(answer: str, decided: str, score: float) -> None:
    result = _eval(answer)
    assert result.metrics["grounding_verdict"].details["verdict"] == decided
    assert result.score == score and result.valid
    assert result.metrics["grounding_verdict"].value == score


def test_high_hallucination_is_a_blocker_but_keeps_the_score() -> None:
    result = _eval("Overnight shipping for items over 10 lbs costs $89.99 since 2019.")
    assert result.blocked and result.blockers == ["hallucination"]
    assert result.valid and result.score == 0.0


def test_thresholds_are_configurable() -> None:
    config = {"query": QUERY, "context": [CONTEXT], "completeness_warn_below": 0.4}
    assert _eval("Overnight shipping costs 69.99.", config=config).score == 1.0



@pytest.mark.parametrize(("fail_above", "answer", "decided", "blocked"), [
    # Five anchors, four unsupported: 0.8 fails the default 0.5, not a case's 0.8.
    (0.8, "Overnight shipping for items over 10 lbs costs 79.99 and 12.50 and ships in 2 "
          "days.", "PASS", False),
    # Four anchors, one unsupported: 0.25 passes the default 0.5, fails a case's 0.2.
    (0.2, "Overnight shipping for items over 10 lbs costs 69.99 and 12.50 more.", "FAIL",
     True),
])
def test_the_hallucination_blocker_follows_the_cases_threshold(
        fail_above: float, answer: str, decided: str, blocked: bool) -> None:
    # Before, the blocker stayed at 0.5: a PASS verdict blocked, a safety FAIL not.
    config = {"query": QUERY, "context": [CONTEXT], "hallucination_fail_above": fail_above}
    result = _eval(answer, config=config)
    assert result.metrics["grounding_verdict"].details["verdict"] == decided
    assert result.blocked is blocked
    assert result.metrics["hallucination"].rating == ("blocker" if blocked else "acceptable")

def test_a_cases_hallucination_limit_outranks_a_teams_policy() -> None:
    # A policy's hallucination bar re-rated a case that set its own limit: 0.25 blocked by
    # the case's 0.2 read "good" under a policy of 0.3, while the verdict said FAIL.
    from pytest_callqa.engine.policy import apply_policy
    from pytest_callqa.engine.registry import default_registry

    registry = default_registry().copy()
    apply_policy(registry, {"metrics": {"hallucination": {"threshold": 0.3}}}, "team.toml")
    answer = "Overnight shipping for items over 10 lbs costs 69.99 and 12.50 more."
    own = evaluate(_case(config={"query": QUERY, "context": [CONTEXT],
                                 "hallucination_fail_above": 0.2}),
                   {"answer": answer}, embedder=TFIDF, registry=registry)
    assert (own.metrics["hallucination"].rating, own.blocked) == ("blocker", True)
    by_policy = evaluate(_case(), {"answer": answer}, embedder=TFIDF, registry=registry)
    assert by_policy.metrics["hallucination"].rating == "good"
    assert own.metrics["hallucination"].details["threshold"] == "> 0.2 → FAIL (blocker)"
    # The edges that rated it go with it, for the figures the messages and the HTML show.
    assert own.metrics["hallucination"].details["band_edges"] == [0.0, 0.2, 0.2]
    assert by_policy.metrics["hallucination"].details["band_edges"] == [0.3, 0.5, 0.5]
    # blocker = false is the team's to say even where the case's limit rates the value.
    lenient = default_registry().copy()
    apply_policy(lenient, {"metrics": {"hallucination": {"blocker": False}}}, "team.toml")
    unblocked = evaluate(_case(config={"query": QUERY, "context": [CONTEXT],
                                       "hallucination_fail_above": 0.2}),
                         {"answer": answer}, embedder=TFIDF, registry=lenient)
    assert (unblocked.metrics["hallucination"].rating, unblocked.blocked) == ("fail", False)


ES_CONTEXT = ("El envío nocturno cuesta 69.99 y no incluye devoluciones gratuitas. El seguro "
              "completo se contrata aparte.")
ES_QUERY = "¿El envío nocturno incluye devoluciones gratuitas?"
DE_CONTEXT = ("Der Expressversand kostet 69.99 und beinhaltet keine kostenlosen Rücksendungen. "
              "Eine Vollversicherung ist extra.")
DE_QUERY = "Beinhaltet der Expressversand kostenlose Rücksendungen?"


@pytest.mark.parametrize(("text", "english"), [
    ("Sí, el envío nocturno incluye devoluciones gratuitas y seguro completo.", False),
    ("Si, el envio nocturno incluye devoluciones gratuitas y seguro completo.", False),
    ("El envío cuesta 89.99 y tarda 2 días.", False),  # "y" is English's too: el decides
    ("Ja, der Expressversand beinhaltet kostenlose Rücksendungen und eine Vollversicherung.",
     False),
    ("隔夜运费是69.99元，包括免费退货。", False),
    ("आपका रिफंड 5 दिन में आएगा।", False),
    (ANSWER, True),
    ("Yes, Mr de la Cruz is the account holder.", True),
    # Words English writes too are no sign of another language: "69.99 per item" and a
    # made-up 99.99 went unscored.
    ("Overnight shipping costs 69.99 per item.", True),
    ("Contact Juan de la Vega at the LA office.", True),
    ("Plan costs $20/month; per-user pricing applies.", True),
    ("69.99", True),
    ("", True),
])
def test_an_answer_reads_as_english_by_its_script_and_function_words(
        text: str, english: bool) -> None:
    assert reads_as_english(text) is english


@pytest.mark.parametrize(("query", "context", "answer"), [
    (ES_QUERY, ES_CONTEXT,
     "Sí, el envío nocturno incluye devoluciones gratuitas y seguro completo."),
    (DE_QUERY, DE_CONTEXT,
     "Ja, der Expressversand beinhaltet kostenlose Rücksendungen und eine Vollversicherung."),
])
def test_a_claim_in_another_language_is_not_passed_as_grounded(
        query: str, context: str, answer: str) -> None:
    # The claim finder knows English verbs only: 0 unsupported of 0 anchors read 0.0, and
    # a made-up claim passed "grounded, relevant and complete".
    result = _eval(answer, config={"query": query, "context": [context]})
    hall = result.metrics["hallucination"]
    assert not hall.scored and hall.value is None
    assert hall.reason == ("not scored: the answer is not in English, whose fact verbs and "
                           "hedges alone the claim check reads, so its claims cannot be "
                           "checked offline")
    decided = result.metrics["grounding_verdict"]
    assert not decided.scored and decided.details["verdict"] is None
    assert decided.reason.startswith("undecided: hallucination not scored")
    # Unknown, not the model's failure.
    assert (result.score, result.valid, result.blocked) == (None, True, False)
    assert result.notes == ["the task score could not be estimated: grounding_verdict, "
                            "hallucination not scored"]
    assert result.metrics["relevance"].scored and result.metrics["completeness"].scored


def test_the_unchecked_hallucination_names_the_numbers_missing_from_the_context() -> None:
    result = _eval("El envío nocturno cuesta 89.99 y tarda 2 días.",
                   config={"query": ES_QUERY, "context": [ES_CONTEXT]})
    assert result.metrics["hallucination"].reason.endswith(
        "; numbers and dates not in the context: '89.99', '2'")
    assert result.score is None


def test_an_irrelevant_answer_in_another_language_still_fails() -> None:
    result = _eval("Los plátanos son amarillos.",
                   config={"query": ES_QUERY, "context": [ES_CONTEXT]})
    assert result.metrics["grounding_verdict"].details["verdict"] == "FAIL"
    assert result.score == 0.0


def test_an_english_answer_without_claims_or_anchors_is_still_scored() -> None:
    result = _eval("Overnight shipping for items over ten lbs, yes.")
    assert result.metrics["hallucination"].details["anchors"] == []
    assert result.metrics["hallucination"].value == 0.0
    assert result.metrics["grounding_verdict"].details["verdict"] == "PASS"


ZH_CONTEXT = "隔夜运费是69.99元，不包括免费退货。"
ZH_QUERY = "隔夜运费是多少？"


def test_a_run_of_an_unspaced_script_is_read_as_its_character_pairs() -> None:
    # One token per run, the question's one "keyword" was the whole question, and an answer
    # copied from the context shared no word with the question or its own source.
    assert query_keywords(ZH_QUERY) == ["隔夜", "夜运", "运费", "费是", "是多", "多少"]
    score, missing = completeness(ZH_QUERY, ZH_CONTEXT)
    assert score == pytest.approx(4 / 6) and missing == ["是多", "多少"]
    rel, cosine, jaccard = relevance(ZH_QUERY, ZH_CONTEXT)
    assert rel == pytest.approx((cosine + jaccard) / 2)
    # 4 shared of the 6 question's and 14 context's pairs.
    assert cosine > 0.2 and jaccard == pytest.approx(4 / 16)
    assert ngram_overlap(ZH_CONTEXT, ZH_CONTEXT) == 1.0
    assert ngram_overlap("隔夜运费是49元", ZH_CONTEXT) == pytest.approx(3 / 6)


def test_a_chinese_answer_copied_from_the_context_is_not_irrelevant() -> None:
    result = _eval(ZH_CONTEXT, config={"query": ZH_QUERY, "context": [ZH_CONTEXT]})
    assert result.metrics["relevance"].value > 0.1
    # Its claims cannot be read (not English): undecided, no longer FAIL "irrelevant".
    assert result.metrics["grounding_verdict"].details["verdict"] is None
    assert result.metrics["reference_similarity"].scored


def test_the_transcript_is_the_context_when_none_is_given() -> None:
    transcript = [{"speaker": "agent", "text": CONTEXT}]
    result = _eval(ANSWER, config={"query": QUERY}, transcript=transcript)
    assert result.metrics["hallucination"].value == 0.0
    assert result.metrics["reference_similarity"].value == pytest.approx(1.0)


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "message"), [
    ("transcript: []\nconfig: {query: 'Refund?'}",
     "config.context: no context"),
    ("transcript: []\nconfig: {query: 'Refund?', context: ['', '  ']}",
     "config.context: every passage is empty"),
    # A transcript or passages of punctuation alone were the context: an answer was grounded
    # in "..." and "?!".
    ("transcript: [{speaker: agent, text: '...'}, {speaker: customer, text: '?!'}]\n"
     "config: {query: 'Refund?'}", "config.context: no context"),
    ("transcript: 'agent: hi'\nconfig: {query: 'Refund?', context: ['...', '\u2014']}",
     "config.context: no passage has a letter or a digit"),
    ("transcript: 'agent: hi'\nconfig: {query: '   '}", "config.query"),
    ("transcript: 'agent: hi'\nconfig: {}", "config.query: Field required"),
    ("transcript: [{speaker: agent, text: ''}]\nconfig: {query: 'Refund?', context: x}",
     "transcript[0].text: empty turn"),
    # Read as 1.0, true passed every hallucinating answer, without a blocker.
    ("transcript: 'agent: hi'\nconfig: {query: 'Refund?', hallucination_fail_above: true}",
     "config.hallucination_fail_above: Value error, true is a boolean, not a number"),
    ("transcript: 'agent: hi'\nconfig: {query: 'Refund?', completeness_warn_below: false}",
     "config.completeness_warn_below: Value error, false is a boolean, not a number"),
])
def test_bad_cases_are_case_file_errors(tmp_path: Any, body: str, message: str) -> None:
    path = write_case(tmp_path, "id: g1\ntask: grounding\nexpected_outcome: {answer: 'x'}\n"
                      + body + "\n")
    with pytest.raises(CaseFileError) as err:
        load_case_file(path)
    assert message in str(err.value)


def test_a_threshold_written_as_a_string_is_read_as_its_number(tmp_path: Any) -> None:
    path = write_case(tmp_path, "id: g1\ntask: grounding\nexpected_outcome: {answer: 'x'}\n"
                      "transcript: 'agent: hi'\nconfig: {query: 'What is the late fee?', "
                      "context: 'The late fee is $25.', hallucination_fail_above: '0.3'}\n")
    [case] = load_case_file(path)
    result = evaluate(case, {"answer": "The late fee is $25."}, embedder=TFIDF)
    thresholds = result.metrics["grounding_verdict"].details["thresholds"]
    assert thresholds["hallucination_fail_above"] == 0.3


@pytest.mark.parametrize(("output", "reason"), [
    ({"answer": 69.99}, "answer"), ({"text": "x"}, "answer: Field required"),
    ("It costs 69.99.", "not valid JSON"),
])
def test_bad_outputs_are_invalid_results(output: Any, reason: str) -> None:
    result = evaluate(_case(), output, embedder=TFIDF)
    assert not result.valid
    assert reason in (result.metrics["response_structure_compliance"].reason or "")


LOAN = "The approved loan amount is $3 million."


@pytest.mark.parametrize(("answer", "passage", "grounded"), [
    ("The approved loan amount is $3,000,000.", LOAN, True),
    ("The approved loan amount is $3 million.", "The approved loan amount is $3,000,000.", True),
    ("The approved loan amount is $3 billion.", LOAN, False),
    ("The credit limit is $2k.", "The credit limit is $2,000.", True),
    ("The company has 40 billion customers.", "The company has 40 million customers.", False),
])
def test_a_scale_word_is_part_of_the_figure(answer: str, passage: str, grounded: bool) -> None:
    # "$3 billion" passed against "$3 million" (hallucination 0), and "$3,000,000" failed
    # with the blocker (1.0): the scale word was not read.
    result = _eval(answer, config={"query": "What is it?", "context": [passage]})
    hall = result.metrics["hallucination"]
    assert [a["supported"] for a in hall.details["anchors"]] == [grounded, grounded]
    assert hall.value == (0.0 if grounded else 1.0)


@pytest.mark.parametrize("answer", ["Your account balance is -$500.",
                                    "Your account balance is \u2212500 dollars."])
def test_a_negative_figure_is_not_the_contexts_positive_one(answer: str) -> None:
    # The minus sign was dropped: hallucination 0.0, PASS, for a balance the context states
    # as $500.
    result = _eval(answer, config={"query": "What is my account balance?",
                                   "context": ["Your account balance is $500."]})
    assert result.metrics["hallucination"].value == 1.0
    assert result.metrics["grounding_verdict"].details["verdict"] == "FAIL"


def test_a_decimal_without_its_leading_zero_is_not_the_whole_number() -> None:
    # ".5%" read as 5%: hallucination 0.0, PASS, against a 5% late fee.
    result = _eval("The late fee is .5%.", config={"query": "What is the late fee?",
                                                   "context": ["The late fee is 5%."]})
    assert result.metrics["hallucination"].value == 1.0
    assert result.metrics["grounding_verdict"].details["verdict"] == "FAIL"


@pytest.mark.parametrize(("answer", "passage"), [
    ("The refund of $200 was approved.", "The refund of $20 was approved."),
    ("Transfers of $10000 are free.", "Transfers of $100 are free."),
])
def test_a_claim_stating_an_unbacked_figure_in_its_subject_is_unsupported(
        answer: str, passage: str) -> None:
    # Only the object's figures were checked: the claim was backed, hallucination 0.5, PASS.
    result = _eval(answer, config={"query": "Was it approved?", "context": [passage]})
    hall = result.metrics["hallucination"]
    assert [(a["kind"], a["supported"]) for a in hall.details["anchors"]] == [
        ("numeric", False), ("claim", False)]
    assert hall.value == 1.0


@pytest.mark.parametrize(("answer", "claims"), [
    ("Yes, you get free overnight shipping as a premium member.", []),
    ("Yes we waive the late fee on your account.", []),
    ("Sure, your refund was approved on Monday.", [("refund", "monday")]),
    ("Of course, refunds take 5 days.", [("refunds", "5 days")]),
    ("Okay so refunds take 7 days.", [("refunds", "7 days")]),
    # A word that may name a thing stays one unless a mark follows it.
    ("Well water is free.", [("well water", "free")]),
    ("Well, refunds take 5 days.", [("refunds", "5 days")]),
    ("Course fees are $50.", [("course fees", "50")]),
])
def test_the_words_opening_an_answer_are_no_subject(answer: str,
                                                    claims: list[tuple[str, str]]) -> None:
    assert [(" ".join(c.subject), " ".join(c.object)) for c in extract_claims(answer)] == claims


def test_a_yes_answer_grounded_in_the_context_passes() -> None:
    # "yes" was the claim's only subject word ("you" is a stopword): no context has it, so
    # the grounded answer scored hallucination 1.0 and failed with the blocker.
    result = _eval("Yes, you get free overnight shipping as a premium member.",
                   config={"query": "Do I get free overnight shipping?",
                           "context": ["Premium members get free overnight shipping."]})
    assert result.metrics["hallucination"].value == 0.0
    assert not result.blocked
    assert result.metrics["grounding_verdict"].details["verdict"] == "PASS"


@pytest.mark.parametrize("opening", ["No, ", "Yes, ", "Nope, ", ""])
def test_an_opening_word_leaves_a_contradicted_figure_failing(opening: str) -> None:
    result = _eval(opening + "refunds take 10 days.",
                   config={"query": "How long do refunds take?",
                           "context": ["Refunds take 5 days."]})
    assert result.metrics["hallucination"].value == 1.0
    assert result.metrics["grounding_verdict"].details["verdict"] == "FAIL"


@pytest.mark.parametrize(("query", "answer"), [
    ("Was the late fee waived?", "Yes, we waive the late fee on your account."),
    ("Was I charged?", "We charge the card once; the second charge is a hold."),
    ("Has my order shipped?", "We ship your order on Monday."),
    ("Was the transfer denied?", "We deny transfers over the limit."),
    ("Are you charging me?", "We charge you nothing."),
])
def test_a_keyword_meets_its_verbs_other_forms(query: str, answer: str) -> None:
    # "waived", "charged" and "shipped" were cut to "waiv", "charg" and "shipp", which
    # "waive", "charge" and "ship" are not: each keyword was missing, completeness < 1.
    assert completeness(query, answer) == (1.0, [])


@pytest.mark.parametrize(("answer", "ledger"), [
    ("You owe $45.20.", "Account balance: -$45.20 (amount due)"),
    ("We applied a $10 credit to your account.", "Adjustments: Goodwill credit -$10.00"),
    ("You got 10% off.", "Promo applied: -10%"),
])
def test_a_positive_figure_beside_the_contexts_negative_one_is_undecided(
        answer: str, ledger: str) -> None:
    # Ledgers write credits, refunds and balances due as negatives. Read both ways, the sign
    # failed these answers at hallucination 1.0; the figure is now left out of the share.
    result = _eval(answer, config={"query": "What about my account?", "context": [ledger]})
    hall = result.metrics["hallucination"]
    assert [a["supported"] for a in hall.details["anchors"] if a["kind"] == "numeric"] == [None]
    assert (hall.details["numerator"], hall.details["denominator"]) == (0, 0)
    assert not hall.blocker


@pytest.mark.parametrize(("answer", "passage"), [
    ("The late fee is .5% per month.", "The late fee is 0.5% per month."),
    ("The late fee is 0.5% per month.", "The late fee is .5% per month."),
    ("The fee is $0.99.", "A fee of $.99 applies."),
])
def test_a_claim_reads_a_leading_dot_decimal_as_its_figure_does(
        answer: str, passage: str) -> None:
    # The figure was backed, the claim not (its word was "5", the passage's "0.5"):
    # S_claims 0.5.
    result = _eval(answer, config={"query": "What is the late fee?", "context": [passage]})
    hall = result.metrics["hallucination"]
    assert [a["supported"] for a in hall.details["anchors"]] == [True, True]


def test_a_figure_written_twice_counts_once_in_the_hallucination_share() -> None:
    # With units read where each figure stands, a value was first counted once per word
    # after it: a repeated unsupported id outweighed the supported figure.
    check = hallucination("Ref 87654321 today, 87654321 tomorrow, 3 days.",
                          ["Your order 12345678 ships in 3 days."])
    figures = [a for a in check.anchors if a["kind"] == "numeric"]
    assert [(a["text"], a["supported"]) for a in figures] == [
        ("87654321", False), ("3", True)]
