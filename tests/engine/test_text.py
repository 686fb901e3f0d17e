from __future__ import annotations

import re
import unicodedata

import pytest

from pytest_callqa.engine import patterns, text
from pytest_callqa.engine.anchors import (
    Anchor,
    anchor_supported,
    extract_anchors,
)
from pytest_callqa.engine.core.memo import batch_memo
from pytest_callqa.engine.core.unicode_text import has_words
from pytest_callqa.engine.text import (
    STOPWORDS,
    ascii_digits,
    contains_phrase,
    content_coverage,
    content_tokens,
    dominant_script,
    extract_quotes,
    extract_timestamps,
    fuzzy_support,
    normalize,
    normalize_loose,
    token_jaccard,
    tokens,
    units,
)
from tests.engine.helpers import unsupported_anchors


def _kv(s: str) -> list[tuple[str, str]]:
    return [(a.kind, a.value) for a in extract_anchors(s)]


# --- normalisation and tokens ----------------------------------------------------------------


def test_scanned_planes_hold_every_mark_punctuation_and_digit() -> None:
    outside = [
        cp
        for cp in range(0x110000)
        if unicodedata.category(chr(cp))[0] in "MP" or unicodedata.category(chr(cp)) == "Nd"
        if not any(cp in plane for plane in text._SCANNED_PLANES)
    ]
    assert outside == []


@pytest.mark.parametrize(
    "raw",
    ["Account_Management", "account management", "account-management", "ACCOUNT — Management"],
)
def test_normalize_treats_underscores_dashes_and_case_alike(raw: str) -> None:
    assert normalize(raw) == "account management"


def test_normalize_applies_nfkc_and_collapses_whitespace() -> None:
    assert normalize("  \uff21\uff22\uff23\t\n ﬁle  ") == "abc file"
    assert normalize("Straße") == "strasse"
    assert normalize("") == ""


def test_normalize_loose_drops_punctuation_but_keeps_numbers_whole() -> None:
    assert normalize_loose("I want a refund!") == "i want a refund"
    assert normalize_loose("It costs 3.5, not 1,200.") == "it costs 3.5 not 1,200"
    assert normalize_loose("didn't (really)") == "didnt really"
    assert normalize_loose("hello,world") == "hello world"
    assert normalize_loose("?!") == ""


def test_tokens_keep_devanagari_combining_marks_inside_words() -> None:
    assert tokens("प्रिया शर्मा") == ["प्रिया", "शर्मा"]
    assert tokens("रिफंड") == ["रिफंड"]
    assert tokens("मुझे रिफंड चाहिए, please!") == ["मुझे", "रिफंड", "चाहिए", "please"]


def test_tokens_ignore_zero_width_joiners() -> None:
    assert tokens("क्\u200dष") == tokens("क्ष")


def test_tokens_lowercase_split_underscores_and_keep_numbers() -> None:
    assert tokens("Refund 3.5 GB, 1,200 users; Account_Management") == [
        "refund",
        "3.5",
        "gb",
        "1,200",
        "users",
        "account",
        "management",
    ]
    assert tokens("") == []
    assert tokens("3.5.") == ["3.5"]


def test_stopwords_keep_domain_words() -> None:
    assert {"the", "and", "is", "to", "we"} <= STOPWORDS
    assert not {"customer", "agent", "caller", "call", "refund"} & STOPWORDS


def test_content_tokens_drop_stopwords_and_single_letters_but_not_digits() -> None:
    assert content_tokens("The customer didn't get a refund for 3 items, x") == [
        "customer",
        "get",
        "refund",
        "3",
        "items",
    ]
    assert content_tokens("it is what it is") == []


def test_units_take_a_run_of_an_unspaced_script_as_its_character_pairs() -> None:
    assert units("对价格的担忧") == ["对价", "价格", "格的", "的担", "担忧"]
    assert units("退款 refund 3.5 days") == ["退款", "refund", "3.5", "days"]
    assert units("価格の心配です") == ["価格", "格の", "の心", "心配", "配で", "です"]
    # Other scripts keep their tokens, stopwords and all.
    assert units("The refund of Priya's order") == tokens("The refund of Priya's order")
    assert units("प्रिया का रिफंड") == tokens("प्रिया का रिफंड")
    assert units("") == []


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("ROI justification", "ROI analysis", 1 / 3),
        ("pricing", "pricing negotiation", 0.5),
        ("David Chen", "David Chen", 1.0),
        # Word-less texts match nothing, each other included (they were identical).
        ("", "", 0.0),
        ("?", "—", 0.0),
        ("", "pricing", 0.0),
        ("pricing", "!!", 0.0),
        ("Refund refund", "REFUND", 1.0),
        # As the family matching reads them: by character pairs (it was 0.0).
        ("价格担忧", "对价格的担忧", 1 / 3),
    ],
)
def test_token_jaccard(a: str, b: str, expected: float) -> None:
    assert token_jaccard(a, b) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("haystack", "needle", "expected"),
    [
        ("I want a refund!", "refund", True),
        ("I want a refund!", "fund", False),
        ("I want a refund!", "A Refund", True),
        ("Account_Management team", "account management", True),
        ("price is 3.5 dollars", "3.5", True),
        ("price is 3.55 dollars", "3.5", False),
        ("मुझे रिफंड चाहिए", "रिफंड", True),
        # The trailing vowel sign belongs to the longer word, so this is not a match.
        ("रिफंडो", "रिफंड", False),
        ("anything", "", False),
        ("", "refund", False),
        # Scripts written without spaces have no word boundary inside a run: a word said in
        # the call is in it (it was reported absent, and counted fabricated).
        ("我要退款。", "退款", True),
        ("返金をお願いします", "返金", True),
        ("ฉันต้องการขอคืนเงิน", "คืนเงิน", True),
        ("退款refund", "refund", True),
        ("我要退款。", "扣款", False),
        # An apostrophe ends a word: a brand said in the possessive is said (it was counted
        # fabricated, which voided the entity score).
        ("I saw Visa's fee on my statement.", "visa", True),
        ("I saw PayPal\u2019s fee.", "PayPal", True),
        ("Amex\u02bcs fee", "amex", True),
        ("j'ai pris l'avion", "avion", True),
        ("I saw Visa's fee.", "Visa's", True),
        ("Call O'Neill back", "O'Neill", True),
        ("Call O'Neill back", "neill", True),
        ("I saw Visa's fee.", "amex", False),
        ("I saw Visa's fee.", "vis", False),
        # Except in n't: the word before it is not said.
        ("I don't know", "don", False),
        ("I don\u2019t know", "don", False),
        ("I don't know", "don't", True),
        ("I DON'T know", "dont", True),
    ],
)
def test_contains_phrase(haystack: str, needle: str, expected: bool) -> None:
    assert contains_phrase(haystack, needle) is expected


# --- anchors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "$49",
        "$49.00",
        "$ 49",
        "USD 49",
        "49 dollars",
        "₹49",
        "Rs. 49",
        "Rs 49",
        "INR 49",
        "49 rupees",
        "49 USD",
        "49/-",
    ],
)
def test_currency_forms_are_one_amount(raw: str) -> None:
    assert _kv(raw) == [("amount", "49")]
    assert extract_anchors(raw)[0].text == raw


def test_other_currencies_and_decimals() -> None:
    assert _kv("€12 and £5.50 and $1,200.00") == [
        ("amount", "12"),
        ("amount", "5.5"),
        ("amount", "1200"),
    ]


@pytest.mark.parametrize("raw", ["10%", "10 %", "10 percent", "10 per cent", "10.0%"])
def test_percent_forms(raw: str) -> None:
    assert _kv(raw) == [("percent", "10")]


def test_numbers_are_canonical_without_trailing_zeros() -> None:
    assert _kv("1,200 then 3.50 then 12,00,000 then 007") == [
        ("number", "1200"),
        ("number", "3.5"),
        ("number", "1200000"),
        ("number", "7"),
    ]


@pytest.mark.parametrize("raw", ["3-5 days", "3\u20135 days", "3 to 5 days", "3 — 5"])
def test_ranges_yield_both_ends(raw: str) -> None:
    assert _kv(raw) == [("number", "3"), ("number", "5")]


def test_unicode_digits_are_read_by_value() -> None:
    assert _kv("कुल ४९ रुपये") == [("number", "49")]
    assert _kv("₹४९") == [("amount", "49")]
    assert extract_anchors("₹४९")[0].text == "₹४९"


def test_digits_inside_words_are_not_numbers() -> None:
    assert _kv("mp3 and A4") == []


def test_number_lists_and_versions() -> None:
    assert _kv("items 1,2,3") == [("number", "1"), ("number", "2"), ("number", "3")]
    assert _kv("version 3.5.2") == [("number", "3.5")]


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("2024-03-05", "2024-03-05"),
        ("13/03/2024", "2024-03-13"),
        ("3/15/24", "2024-03-15"),
        ("05/03/2024", "05/03/2024"),
        ("05.03.2024", "05/03/2024"),
        ("March 5", "m03-d05"),
        ("5 March", "m03-d05"),
        ("5th of March", "m03-d05"),
        ("March 5th, 2024", "2024-03-05"),
        ("Nov 3rd", "m11-d03"),
        ("sept. 30", "m09-d30"),
        ("on 3rd March.", "m03-d03"),
        ("in 2019", "y2019"),
        # Month names of the languages the offline checks read (they were bare numbers, so
        # "5 de marzo" and "5 de abril" were the same two facts, 5 and 2024).
        ("el 5 de marzo de 2024", "2024-03-05"),
        ("5 de marzo del 2024", "2024-03-05"),
        ("le 1er août 2024", "2024-08-01"),
        ("am 5. März 2024", "2024-03-05"),
        ("5 de setembro de 2024", "2024-09-05"),
        ("il 5 dicembre", "m12-d05"),
        ("5 अप्रैल 2024", "2024-04-05"),
        ("3 fe\u0301vrier", "m02-d03"),
        # Month first in another language, and German's dot before a name English shares.
        ("enero 15 de 2024", "2024-01-15"),
        ("Dezember 24", "m12-d24"),
        ("am 5. August 2024", "2024-08-05"),
        ("في 5 مايو 2024", "2024-05-05"),
    ],
)
def test_dates(raw: str, value: str) -> None:
    assert _kv(raw) == [("date", value)]


def test_month_text_keeps_abbreviation_dots_only() -> None:
    assert [a.text for a in extract_anchors("on 3rd March. Then Dec. 5, 2023.")] == [
        "3rd March",
        "Dec. 5, 2023",
    ]


def test_impossible_dates_fall_back_to_numbers() -> None:
    assert _kv("2024-02-30") == [("date", "y2024"), ("number", "2"), ("number", "30")]
    assert _kv("March 35") == [("number", "35")]
    assert _kv("March 2024") == [("date", "y2024")]


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("3:30 pm", "15:30"),
        ("3:30PM", "15:30"),
        ("3 pm", "15:00"),
        ("10 a.m.", "10:00"),
        ("12 am", "00:00"),
        ("12:15 pm", "12:15"),
        ("15:30", "15:30"),
        ("3:30", "03:30"),
        ("01:02:03", "01:02:03"),
    ],
)
def test_times(raw: str, value: str) -> None:
    assert _kv(raw) == [("time", value)]


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("(977) 625-2661", "9776252661"),
        ("977-625-2661", "9776252661"),
        ("977.625.2661", "9776252661"),
        ("+1 977 625 2661", "19776252661"),
        ("98765 43210", "9876543210"),
        ("order 12345678", "12345678"),
    ],
)
def test_ids_and_phone_numbers_are_one_anchor(raw: str, value: str) -> None:
    assert _kv(raw) == [("id", value)]


def test_long_decimal_is_a_number_not_an_id() -> None:
    assert _kv("1234567.89") == [("number", "1234567.89")]


def test_anchors_in_order_without_duplicates() -> None:
    found = extract_anchors("Refund $49 on March 5 at 3 pm; again $49, then 10% off 2 items")
    assert [(a.kind, a.text, a.value) for a in found] == [
        ("amount", "$49", "49"),
        ("date", "March 5", "m03-d05"),
        ("time", "3 pm", "15:00"),
        ("percent", "10%", "10"),
        ("number", "2", "2"),
    ]


def test_no_anchors_in_plain_text() -> None:
    assert extract_anchors("") == []
    assert extract_anchors("the customer may call back") == []


def test_unsupported_amount_is_reported() -> None:
    assert unsupported_anchors("Refund of $99", "refund of $49") == [Anchor("amount", "$99", "99")]


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        ("3\u20135 business days", "3 to 5 days"),
        ("₹49", "Rs. 49"),
        ("$49", "49 dollars"),
        ("$49", "it was 49"),
        ("(977) 625-2661", "9776252661"),
        ("call +1 977 625 2661", "my number is 977-625-2661"),
        ("10% discount", "a discount of 10 percent"),
        ("on March 5", "on 2024-03-05"),
        ("on March 5", "on 05/03/2024"),
        ("on 2024-03-05", "on 5 March, in 2024"),
        ("in 2024", "2024-03-05"),
        ("2000 customers", "2,000 customers"),
        ("at 3:30", "at 3:30 pm"),
        ("at 3:30 pm", "at 15:30"),
        ("order 1200000", "1,200,000"),
    ],
)
def test_supported_anchors(claim: str, context: str) -> None:
    assert unsupported_anchors(claim, context) == []


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        ("10% discount", "a discount was offered"),
        ("10% discount", "a 15% discount"),
        ("on March 6", "on 2024-03-05"),
        ("on 2024-03-05", "on March 5"),
        ("at 3:30 am", "at 3:30 pm"),
        ("call 977-625-2662", "9776252661"),
        ("in 2023", "2024-03-05"),
    ],
)
def test_unsupported_anchors(claim: str, context: str) -> None:
    assert len(unsupported_anchors(claim, context)) == 1


def test_unsupported_anchors_checks_every_context() -> None:
    assert unsupported_anchors("$49 and $99", "paid $49", "then 99 dollars") == []
    assert unsupported_anchors("$49 and $99", "paid $49") == [Anchor("amount", "$99", "99")]
    assert unsupported_anchors("$49") == [Anchor("amount", "$49", "49")]


def test_anchor_supported_directly() -> None:
    context = extract_anchors("49 dollars on 05/03/2024")
    assert anchor_supported(Anchor("number", "49", "49"), context)
    assert anchor_supported(Anchor("date", "3 May", "m05-d03"), context)
    assert anchor_supported(Anchor("date", "5 March", "m03-d05"), context)
    assert not anchor_supported(Anchor("date", "6 March", "m03-d06"), context)
    assert not anchor_supported(Anchor("time", "4:00", "04:00"), context)
    assert not anchor_supported(Anchor("number", "49", "49"), [])


# --- quotes and timestamps -------------------------------------------------------------------


def test_quotes_of_every_style_in_order() -> None:
    s = (
        'He said "I want a refund." then “please hurry” and \u2018call me back\u2019 '
        "and 'not now, thanks'"
    )
    assert extract_quotes(s) == [
        "I want a refund",
        "please hurry",
        "call me back",
        "not now, thanks",
    ]


@pytest.mark.parametrize(("opening", "closing"), [
    ("\u201e", "\u201c"),  # German „…“
    ("\u201e", "\u201d"),  # Polish „…”
    ("\u00ab", "\u00bb"),  # French «…»
    ("\u00bb", "\u00ab"),  # German and Danish »…«
    ("\u300c", "\u300d"),  # Chinese and Japanese 「…」
    ("\u300e", "\u300f"),  # 『…』
    ("\uff02", "\uff02"),  # full-width ＂…＂
    ("\u201a", "\u2018"),  # German single ‚…‘
    ("\u2039", "\u203a"),  # single guillemets ‹…›
    ("\u203a", "\u2039"),  # ›…‹
])
def test_quotes_in_the_marks_of_other_languages(opening: str, closing: str) -> None:
    # A judge reason quoting the call in its language's marks cited nothing: evidence 0.
    assert extract_quotes(f"Der Agent sagte {opening}Ihre Erstattung kommt{closing} am Ende") \
        == ["Ihre Erstattung kommt"]


def test_a_mark_that_closes_a_quote_opens_none() -> None:
    assert extract_quotes("\u00abOui, bien s\u00fbr\u00bb dit-il \u00abnon merci\u00bb") == [
        "Oui, bien s\u00fbr", "non merci"]
    assert extract_quotes("\u201eja bitte\u201c und \u201cnein danke\u201d") == [
        "ja bitte", "nein danke"]


def test_apostrophes_do_not_open_quotes() -> None:
    assert extract_quotes("I didn't get it and the agents' reply wasn't clear") == []
    assert extract_quotes("She said 'I didn't get it' twice") == ["I didn't get it"]
    assert extract_quotes("He said \u2018I didn\u2019t get it\u2019 twice") == [
        "I didn\u2019t get it"
    ]


def test_single_quotes_need_two_words_double_quotes_do_not() -> None:
    assert extract_quotes("the 'refund' issue") == []
    assert extract_quotes('the "refund" issue') == ["refund"]
    # A script written without spaces has no two words: four characters are enough (the
    # reason ‘我已为您发起49元的退款’ cited no quote, and scored 0 where English scored 1).
    assert extract_quotes("客服说‘我已为您发起49元的退款’") == ["我已为您发起49元的退款"]
    assert extract_quotes("客服说‘退款’") == []
    # There a letter follows the closing ’ at once: it closes the quote (two were glued into
    # one span that is in no transcript, or none was found).
    assert extract_quotes("客服说‘我已为您退款’然后说‘请查收短信’。") == [
        "我已为您退款", "请查收短信"]
    assert extract_quotes("オペレーターは‘返金します’と言った") == ["返金します"]
    assert extract_quotes("He said ‘I didn’t get it today’ twice") == ["I didn’t get it today"]


def test_short_and_nested_quotes() -> None:
    assert extract_quotes('a "x" and "!!" and " ok "') == ["ok"]
    assert extract_quotes("\"he said 'no refund please' twice\"") == [
        "he said 'no refund please' twice"
    ]
    assert extract_quotes("no quotes here") == []


def test_timestamps_in_seconds() -> None:
    s = "At 00:12 she asked, at 1:23 he replied, [02:15] and 01:02:03 and 12:05.5"
    assert extract_timestamps(s) == [12.0, 83.0, 135.0, 3723.0, 725.5]


def test_timestamps_skip_clock_times_and_ratios() -> None:
    assert extract_timestamps("call me at 3:30 pm or 10:15AM or 9:00 a.m.; rated 4/5, 3:1") == []
    assert extract_timestamps("") == []


def test_timestamps_read_unicode_digits() -> None:
    assert extract_timestamps("०१:३०") == [90.0]


# --- fuzzy support, scripts, coverage --------------------------------------------------------


def test_fuzzy_support() -> None:
    assert fuzzy_support("I want a refund", ["Customer: I want a refund, please."]) == 1.0
    assert fuzzy_support("want a refnd", ["nothing here", "I want a refund"]) == pytest.approx(
        11 / 12
    )
    assert fuzzy_support("", ["abc"]) == 0.0
    assert fuzzy_support("abc", []) == 0.0


def test_fuzzy_support_does_not_reward_a_haystack_inside_the_needle() -> None:
    assert fuzzy_support("I want a refund for order 123", ["refund"]) < 0.5


@pytest.mark.parametrize(
    ("s", "script"),
    [
        ("Hello world", "LATIN"),
        ("प्रिया शर्मा", "DEVANAGARI"),
        ("Hi नमस्ते जी", "DEVANAGARI"),
        ("你好", "CJK"),
        ("مرحبا", "ARABIC"),
        ("привет", "CYRILLIC"),
        ("안녕", "HANGUL"),
        ("ありがとう", "HIRAGANA"),
        ("\uff21\uff22\uff23", "LATIN"),
        ("123 !?", None),
        ("", None),
    ],
)
def test_dominant_script(s: str, script: str | None) -> None:
    assert dominant_script(s) == script


def test_content_coverage() -> None:
    assert content_coverage("The customer wants a refund", "customer wants refund now") == 1.0
    assert content_coverage("customer refund", "the customer was refunded") == 1.0
    assert content_coverage("refunds", "one refund") == 1.0
    assert content_coverage("customer cancelled", "customer called") == 0.5
    assert content_coverage("refund of 1200", "refund of 12000") == 0.5
    assert content_coverage("refund", "") == 0.0
    assert content_coverage("the and of", "anything") == 1.0
    assert content_coverage("customer refund", "customer", "refund") == 1.0
    assert content_coverage("customer customer refund", "customer") == 0.5


def test_content_coverage_of_scripts_written_without_spaces() -> None:
    # A run of Han characters is one token: a verbatim phrase of a turn met no token of it,
    # and a quote of the call counted as fabricated.
    turn = ("\u6211\u60f3\u9884\u7ea6\u4e00\u4e2a\u65f6\u95f4\u6765"
            "\u529e\u7406\u5f00\u6237\u4e1a\u52a1")
    assert content_coverage("\u529e\u7406\u5f00\u6237\u4e1a\u52a1", turn) == 1.0
    # Character pairs: 办理 is in the call, 退款 ("refund") is not.
    assert content_coverage("\u529e\u7406\u9000\u6b3e", turn) == pytest.approx(1 / 3)
    assert content_coverage("\u9000\u6b3e", turn) == 0.0
    thai = "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a"
    assert content_coverage(thai[:5], thai) == 1.0
    # A claim in a spaced script is compared by whole tokens as before.
    assert content_coverage("refund \u529e\u7406", f"refund {turn}") == 1.0


def test_memoised_quotes_and_content_words_are_fresh_lists_in_a_batch() -> None:
    with batch_memo():
        quotes = extract_quotes('she said "no refund" twice')
        quotes.append("changed")
        words = content_tokens("the refund arrived")
        words.append("changed")
        assert extract_quotes('she said "no refund" twice') == ["no refund"]
        assert content_tokens("the refund arrived") == ["refund", "arrived"]


@pytest.mark.parametrize(("raw", "loose"), [
    ("Refund: 3.5 days, $1,200. Ok!", "refund 3.5 days $1,200 ok"),
    ("रिफंड: 3.5 दिन, ₹1,200. ठीक!", "रिफंड 3.5 दिन ₹1,200 ठीक"),
    ("(1.5)-(2)", "1.5 2"),
])
def test_loose_normalisation_keeps_punctuation_between_digits_in_any_script(
        raw: str, loose: str) -> None:
    assert normalize_loose(raw) == loose


def test_ascii_digits_rewrites_other_scripts_digits_only() -> None:
    assert ascii_digits("₹४९ on ٣/٤") == "₹49 on 3/4"
    assert ascii_digits("$49 on 3/4") == "$49 on 3/4"


def test_character_rewrites_equal_translation_tables_over_every_code_point() -> None:
    # The regexes that rewrite digits, dashes and invisible joiners stand for these tables.
    every = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
    digits = {cp: str(unicodedata.digit(chr(cp))) for cp in range(0x110000)
              if not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)) == "Nd"}
    dashes = dict.fromkeys(
        map(ord, "_-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), " ")
    invisible = dict.fromkeys(map(ord, "\u00ad\u200c\u200d\u2060"))
    assert ascii_digits(every) == every.translate(digits)
    assert text._DASHES_RE.sub(" ", every) == every.translate(dashes)
    assert text._INVISIBLE_RE.sub("", every) == every.translate(invisible)
    assert normalize("a\u2013b_c\uff0dd") == "a b c d"
    assert tokens("सं\u200cवाद") == ["संवाद"]


def test_patterns_cut_to_the_plane_match_as_their_full_classes() -> None:
    plane = "".join(chr(cp) for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF)
    both = plane + "".join(chr(cp) for cp in range(0x10000, 0x110000))
    for pattern in (text._TOKEN, text._LOOSE_PUNCT, text._OTHER_DIGITS):
        full = re.compile(pattern._pattern(text._char_class))
        assert pattern.for_text(plane) is not pattern.for_text(both)
        assert pattern.for_text(plane).findall(plane) == full.findall(plane)
        assert pattern.for_text(both).findall(both) == full.findall(both)
    # Marks, punctuation and digits beyond the plane (Brahmi, mathematical digits).
    assert tokens("\U00011013\U00011038 \U0001D7D7") == ["\U00011013\U00011038", "9"]
    assert normalize_loose("ok\U00011047 ok") == "ok ok"
    assert ascii_digits("४ and \U0001D7D7") == "4 and 9"


@pytest.mark.parametrize(("raw", "found"), [
    # Upper case, in an ASCII text: the literal checks that skip patterns ignore case.
    ("PAID RS 500 AT 3 PM ON MARCH 5, 2024, 12 EUROS, 5 PERCENT",
     [("amount", "500"), ("time", "15:00"), ("date", "2024-03-05"), ("amount", "12"),
      ("percent", "5")]),
    # Enough digits for phone numbers and ids, each kind once.
    ("Call 98765 43210 or +1 415-555-0100, ref 1234567, 2024-03-05 at 10:30",
     [("id", "9876543210"), ("id", "14155550100"), ("id", "1234567"),
      ("date", "2024-03-05"), ("time", "10:30")]),
    # Not ASCII: every pattern runs.
    ("paid ₹500 at 3 pm on ५ March", [("amount", "500"), ("time", "15:00"),
                                      ("date", "m03-d05")]),
])
def test_anchor_patterns_are_skipped_only_where_they_cannot_match(
        raw: str, found: list[tuple[str, str]]) -> None:
    assert _kv(raw) == found


def test_tokens_of_ascii_and_other_texts() -> None:
    assert tokens("Didn't_GET 3.5 refunds, 1,200 items") == [
        "didn", "t", "get", "3.5", "refunds", "1,200", "items"]
    # Full-width letters fold to ASCII, ß casefolds to ss, Devanagari keeps its marks.
    assert tokens("ＳＴＲＡßＥ  रिफंड 3.5") == ["strasse", "रिफंड", "3.5"]


def test_the_generated_unicode_ranges_are_a_scan_of_this_pythons_database() -> None:
    # An import reads the generated table rather than scanning 135,000 code points; a Python
    # with another Unicode database scans, and the stale table must be regenerated.
    assert unicodedata.unidata_version == text.UNIDATA_VERSION, \
        "regenerate it: python tools/unicode_ranges.py"
    assert text._categories() == text.scan_categories()
    assert sum(len(v) for v in text._categories().values()) > 3000


def _scan(needle: str, haystacks: list[str]) -> tuple[float, int]:
    """Every haystack aligned with rapidfuzz, the best kept (the first on a tie)."""
    from rapidfuzz import fuzz

    n = text.normalize_loose(needle)
    if not n:
        return 0.0, -1
    best, where = 0.0, -1
    for index, haystack in enumerate(haystacks):
        h = text.normalize_loose(haystack)
        score = (fuzz.partial_ratio if len(h) >= len(n) else fuzz.ratio)(n, h)
        if score > best:
            best, where = score, index
    return best / 100.0, where


def test_a_quote_found_word_for_word_scores_as_the_full_alignment_does() -> None:
    import random

    rng = random.Random(13)
    words = ["refund", "the", "card", "was", "charged", "twice", "£49.99", "on", "Monday",
             "I'll", "check", "it", "—", "ok", "ok"]
    turns = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(8)]
    turns += ["", "THE CARD WAS CHARGED", turns[2]]
    needles = [t[a:b] for t in turns for a, b in ((0, 5), (2, 30), (0, 200))]
    needles += ["card was charged", "charged twice on Monday ok", "nothing like it", "  ",
                "the card was charged twice on monday and more"]
    for needle in needles:
        expected = _scan(needle, turns)
        assert text.best_fuzzy_match(needle, turns) == expected, needle
        normalised = [text.normalize_loose(t) for t in turns]
        assert text.best_fuzzy_match(needle, normalised, normalized=True) == expected, needle


def test_stopwords_of_other_languages_leave_english_content_words() -> None:
    # The Spanish, French, German, Portuguese, Italian and Hindi function words are skipped;
    # a word that is also an English content word (a son, a SIM card, a time zone) is not.
    assert content_tokens("el cliente quiere cancelar la suscripción de su cuenta") == [
        "cliente", "quiere", "cancelar", "suscripción", "cuenta"]
    assert content_tokens("der Kunde möchte sein Abonnement kündigen") == [
        "kunde", "möchte", "abonnement", "kündigen"]
    assert content_tokens("ग्राहक अपनी सदस्यता रद्द करना चाहता है") == ["ग्राहक", "सदस्यता", "रद्द",
                                                                    "चाहता"]
    english = "my son's SIM card OS update at 9 ET or EST died hat den come plus AI"
    assert content_tokens(english) == ["son", "sim", "card", "os", "update", "9", "et", "est",
                                       "died", "hat", "den", "come", "plus", "ai"]
    more = "car insurance to sue a non-refundable pour par eu er mit dos nas cet"
    assert content_tokens(more) == ["car", "insurance", "sue", "non", "refundable", "pour",
                                    "par", "eu", "er", "mit", "dos", "nas", "cet"]


def test_numbers_written_with_a_dot_for_thousands() -> None:
    # "23.509,52 $" read as the numbers 23.509 and 52, and "1.540 $" as 1.54: a Spanish or
    # German reply relaying $23,509.52 and $1,540 was scored as inventing numbers.
    assert _kv("23.509,52 $") == [("number", "23509.52")]
    assert _kv("1.540.000") == [("number", "1540000")]
    assert _kv("1.540,00 €") == [("number", "1540")]
    # One dot before three digits has two readings, 1.54 and 1540; each backs the other's.
    [ambiguous] = extract_anchors("1.540 $")
    assert (ambiguous.value, ambiguous.other) == ("1.54", "1540")
    assert anchor_supported(ambiguous, extract_anchors("$1,540"))
    assert anchor_supported(extract_anchors("$1,540")[0], [ambiguous])
    assert anchor_supported(ambiguous, extract_anchors("1.54 kg"))
    assert not anchor_supported(ambiguous, extract_anchors("$154"))
    # A comma before the cents of an amount or a percentage, a space or a no-break space
    # grouping thousands, and Arabic separators: "49,99 €" was 49 and 99 (a highlight saying
    # 99 € passed), "1 540 €" 1 and 540 (one saying 540 € passed, one saying 1540 € voided).
    assert _kv("49,99 €; 12,5 %; €49,99") == [
        ("number", "49.99"), ("percent", "12.5"), ("amount", "49.99")]
    assert _kv("1 540 € y 1\u202f540,00 €") == [("number", "1540"), ("number", "1540")]
    assert _kv("\u0661\u066c\u0665\u0664\u0660\u066b\u0665") == [("number", "1540.5")]
    assert _kv("items 1,2,3 on pages 3,4 between 10 500 and") == [
        ("number", "1"), ("number", "2"), ("number", "3"), ("number", "4"), ("number", "10"),
        ("number", "500")]
    # A dollar, a pound or a bare "%" is no sign of that notation: a list and two figures.
    assert _kv("Prices are $5,10 and $15; option 2 100% refund; 1,50 Europe") == [
        ("amount", "5"), ("number", "10"), ("amount", "15"), ("number", "2"),
        ("percent", "100"), ("number", "1"), ("number", "50")]
    # A month name that is also an English word is a month only after "de", German's dot
    # or before a year; none starts inside a word.
    assert _kv("ordered 5 Mars bars, 2 Mayo Clinic bills; Julio 15; grammars 2") == [
        ("number", "5"), ("number", "2"), ("number", "15")]
    assert _kv("5 de mayo; 5 avril 2024; am 6. Mai") == [
        ("date", "m05-d05"), ("date", "2024-04-05"), ("date", "m05-d06")]
    assert _kv("le 5 mars; le 1er mai; julio 15 de 2024; 12,5%") == [
        ("date", "m03-d05"), ("date", "m05-d01"), ("date", "2024-07-15"), ("percent", "12.5")]
    # A leading zero groups nothing: 125 mg is not 0.125 mg.
    assert unsupported_anchors("take 125 mg of digoxin", "take 0.125 mg") == [
        Anchor("number", "125", "125")]
    # German's "5. März" dot is read before another language's month name only.
    assert _kv("charged twice, 12. May I get a refund? 3. March billing") == [
        ("number", "12"), ("number", "3")]
    # English forms read as before.
    assert _kv("$1,540.50 and 3.14159 and 12,00,000") == [
        ("amount", "1540.5"), ("number", "3.14159"), ("number", "1200000")]


def test_a_prefix_tree_finds_what_the_alternation_of_its_names_finds() -> None:
    names = ["mai", "maio", "marzo", "março", "juni", "junio", "अगस्त"]
    tree, alternation = re.compile(patterns.prefix_tree(names)), re.compile("|".join(names))
    for sample in ["email", "ma", "marz", "5 de março", "junho", "अगस्त 5", "nothing"]:
        assert (tree.search(sample) is None) == (alternation.search(sample) is None), sample


def test_matching_at_lead_offsets_finds_what_finditer_finds() -> None:
    # Every match starts at a digit run's first digit: tried there alone, the same matches.
    pattern = re.compile(r"(?<![0-9])[0-9]+(?:\.[0-9]+)?")
    sample = "12 apples, 3.5 kg and 40 pears at 7"
    leads = [m.start() for m in re.finditer(r"[0-9]+", sample)]
    assert [m.span() for m in patterns.matches_at(pattern, sample, leads)] == [
        m.span() for m in pattern.finditer(sample)]
    assert patterns.found_at("banana", ["an", "na"]) == [1, 2, 3, 4]


@pytest.mark.parametrize(("value", "expected"), [
    ("ok", True), ("5", True), ("नमस्ते", True), ("退款", True), ("\u200bhi", True),
    ("", False), ("...", False), ("\u200b", False), ("\ufeff \u200d", False),
    ("\U0001f44d", False), ("- ? !", False),
])
def test_has_words_needs_a_letter_or_digit(value: str, expected: bool) -> None:
    assert has_words(value) is expected
