"""Words the offline checks read, in the languages customer calls here are held in most:
function words they skip, the caller's own words, month names and numbers said in words.

With English words alone, a Spanish or French claim's articles and prepositions (el, la,
de, le, des) counted as content: two different call purposes shared half their "key
words" and the heuristic judge rated them a partial or full match, where the same two
purposes in English were not scored. A word that is also an English content word a call
may turn on is left out of every list (German "die", "hat", "den", "mit"; "son"; Italian
"come", "sue", "non"; French "plus", "car", "pour", "par"; "est" and "et", time zones;
"sim", "os", "ai", "eu", "dos"; "al", "ed", "han", "mon", "er" — names, days and the
like), so an English text loses no word a call is likely to turn on; two-letter
state codes such as LA, IL and DE go, as ME, IN and OR always did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise
from unicodedata import normalize

_ENGLISH = """
    a an the this that these those
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    who whom whose which what
    am is are was were be been being have has had having do does did doing
    will would shall should can could may might must
    of at by for with about against between into through during before after above below
    to from up down in out on off over under again further
    and but or nor so yet if then else than because as until while
    there here when where why how all any both each few more most other some such
    no not only own same too very just also
    s t d ll m o re ve y don didn doesn isn wasn weren aren hasn haven hadn won wouldn
    shouldn couldn mustn needn
"""
_SPANISH = """
    el la los las lo un una unos unas del de en y ni que qué se su sus tu tus nos le les
    te es está están estaba fue ser estar ha hemos por para con sobre entre como cómo
    pero más muy ya sí este esta estos estas ese esa esos esas eso esto aquel porque
    cuando donde dónde también tiene tienen si
"""
_FRENCH = """
    le la les un une des du de ou où que qui quoi ne pas se sa ses ce cette ces il elle ils
    elles je tu nous vous au en dans sur avec sans sont était été être avoir ont très mais
    comme leur leurs ta tes notre nos votre vos lui même aussi donc parce qu quand si alors
    puis
"""
_GERMAN = """
    der das dem des ein eine einen einem einer eines und oder aber nicht kein keine ist sind
    waren sein seine ihr ihre ich du sie es wir mich mir dich dir sich zu zum zur von vom
    bei für auf aus im um über unter nach vor durch auch noch nur schon sehr wie wenn dass
    ob weil haben habe wird werden wurde kann können soll muss
"""
_PORTUGUESE = """
    um uma uns umas de do da das em na por pelo pela para sem ou que se seu sua seus
    suas meu minha é são está estão foi ser ter tem têm não mais muito mas como também ao
    aos à este esta esse essa isso isto ele ela eles elas você nós lhe porque quando
"""
_ITALIAN = """
    il lo la gli le un uno una di del della dei degli delle da dal dalla nel nella con su
    per tra fra che chi è sono ha hanno ho anche più molto questo questa quello quella ti ci
    vi si suo sua suoi mio mia alla perché quando
"""
_HINDI = """
    का की के को में से पर और है हैं था थी थे हो या भी तो ने यह वह ये वे इस उस एक कि जो
    लिए साथ अपना अपनी अपने मैं हम आप तुम मेरा मेरी मेरे हमारा नहीं कर करना करने रहा
    रही रहे गया गई
"""

STOPWORDS: frozenset[str] = frozenset(
    (_ENGLISH + _SPANISH + _FRENCH + _GERMAN + _PORTUGUESE + _ITALIAN + _HINDI).split())
# Which of the two a text uses more tells English from the other languages (the grounding
# family finds claims in English only). "y" and "do", in English's list and another's,
# tell neither: "y" counted as English made "cuesta 89.99 y tarda" half English. Nor do the
# other languages' words English writes too ("69.99 per item", "Juan de la Vega", "um").
NON_ENGLISH_STOPWORDS: frozenset[str] = STOPWORDS - frozenset(_ENGLISH.split()) - frozenset(
    ("per", "um", "de", "la", "con", "lo"))
ENGLISH_STOPWORDS: frozenset[str] = frozenset(_ENGLISH.split()) - frozenset(
    (_SPANISH + _FRENCH + _GERMAN + _PORTUGUESE + _ITALIAN + _HINDI).split())

# Words that say who called rather than why, in the same languages: they must not make two
# call purposes look alike.
_CALLER = """
    customer caller client user agent call calls calling called wants want wanted asking asks
    asked requesting requests request inquiring inquiry about regarding help needs need
    would like
    cliente clientes quiere quería desea necesita llama llamó llamada ayuda solicita
    solicitó pide pidió pregunta preguntó
    veut voulait souhaite demande appelle appel aide besoin réclame
    kunde kundin möchte wollte will ruft anruf hilfe braucht bittet fragt
    quer queria deseja precisa ligou ligação ajuda pede pediu pergunta
    vuole voleva desidera chiede chiama chiamata aiuto
    ग्राहक चाहता चाहती चाहते कॉल मदद
    العميل يريد يطلب
"""
CALLER_WORDS: frozenset[str] = frozenset(_CALLER.split())
# Chinese writes them inside a word ("客户要求退款"): they are cut out of the text itself.
UNSPACED_CALLER_WORDS = ("客户", "顾客", "要求", "想要", "希望", "请求")

# Month names beside English's (which anchors.py spells with their abbreviations), written
# in full: an abbreviation such as "set" or "out" is an English word.
_MONTHS = {
    "spanish": "enero febrero marzo abril mayo junio julio agosto septiembre octubre "
               "noviembre diciembre",
    "french": "janvier février mars avril mai juin juillet août septembre octobre novembre "
              "décembre",
    "german": "januar februar märz april mai juni juli august september oktober november "
              "dezember",
    "portuguese": "janeiro fevereiro março abril maio junho julho agosto setembro outubro "
                  "novembro dezembro",
    "italian": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre "
               "novembre dicembre",
    "hindi": "जनवरी फ़रवरी मार्च अप्रैल मई जून जुलाई अगस्त सितंबर अक्टूबर नवंबर दिसंबर",
    # Egyptian and Gulf (the Levantine names are two words apiece, and not read).
    "arabic": "يناير فبراير مارس أبريل مايو يونيو يوليو أغسطس سبتمبر أكتوبر نوفمبر ديسمبر",
}
# Each in its composed and its decomposed form ("é" as one character or two): the anchors
# are read from the text as written.
MONTH_NAMES: dict[str, int] = {
    normalize(form, name): number
    for names in _MONTHS.values()
    for number, name in enumerate(names.split(), start=1)
    for form in ("NFC", "NFD")
} | {"setiembre": 9, "फरवरी": 2, "सितम्बर": 9, "नवम्बर": 11, "दिसम्बर": 12, "ابريل": 4,
     "اغسطس": 8, "اكتوبر": 10}

# Numbers said in words and their values, that a text may say where another writes digits
# ("tres días" for "3 days"). The words for one are left out: un, una, ein and एक are
# articles too; so are words that are also English ones a sentence with a figure holds
# ("once", "sept", "cent", "due").
_NUMBERS = {
    "english": "two 2 three 3 four 4 five 5 six 6 seven 7 eight 8 nine 9 ten 10 eleven 11 "
               "twelve 12 thirteen 13 fourteen 14 fifteen 15 sixteen 16 seventeen 17 "
               "eighteen 18 nineteen 19 twenty 20 thirty 30 forty 40 fifty 50 sixty 60 "
               "seventy 70 eighty 80 ninety 90 hundred 100 thousand 1000",
    "spanish": "dos 2 tres 3 cuatro 4 cinco 5 seis 6 siete 7 ocho 8 nueve 9 diez 10 doce 12 "
               "quince 15 veinte 20 treinta 30 cuarenta 40 cincuenta 50 cien 100 ciento 100 "
               "mil 1000",
    "french": "deux 2 trois 3 quatre 4 cinq 5 huit 8 neuf 9 dix 10 onze 11 douze 12 quinze 15 "
              "vingt 20 trente 30 quarante 40 cinquante 50 mille 1000",
    "german": "zwei 2 drei 3 vier 4 fünf 5 sechs 6 sieben 7 acht 8 neun 9 zehn 10 elf 11 "
              "zwölf 12 zwanzig 20 dreißig 30 vierzig 40 fünfzig 50 hundert 100 tausend 1000",
    "portuguese": "dois 2 duas 2 três 3 quatro 4 sete 7 oito 8 nove 9 dez 10 doze 12 vinte 20 "
                  "trinta 30 quarenta 40 cinquenta 50",
    "italian": "tre 3 quattro 4 sei 6 sette 7 otto 8 nove 9 dieci 10 undici 11 dodici 12 "
               "venti 20 trenta 30 quaranta 40 cinquanta 50 cento 100",
    "hindi": "दो 2 तीन 3 चार 4 पांच 5 पाँच 5 छह 6 सात 7 आठ 8 नौ 9 दस 10 बारह 12 बीस 20 तीस 30 "
             "चालीस 40 पचास 50 सौ 100 हज़ार 1000 हजार 1000",
}
NUMBER_WORDS: dict[str, int] = {
    word: int(value)
    for pairs in _NUMBERS.values()
    for word, value in zip(pairs.split()[::2], pairs.split()[1::2], strict=True)
}


# A letter of a script none of those number words is written in (Hangul, Arabic, Hebrew,
# Thai, Cyrillic…): a text holding one may say a number in words no offline check reads
# ("ثلاثة إلى خمسة"). Latin (with its ordinal and micro signs), Devanagari, and Chinese and
# Japanese (kana and the Han numerals, read by han_numbers) are read.
_UNREAD_LETTER = re.compile(
    "(?![A-Za-z\u00aa\u00b5\u00ba\u00c0-\u024f\u1e00-\u1eff\u0900-\u097f"
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff])[^\\W\\d_]")


def number_words_unread(text: str) -> bool:
    """Whether ``text`` is written, at least in part, in a script whose number words the
    lexicon does not hold, so a figure it lacks in digits it may say in words."""
    return _UNREAD_LETTER.search(text) is not None


# What joins a tens word and a unit: "cuarenta y nueve", "quarenta e nove".
_JOINERS = frozenset({"y", "e", "and"})


def numbers_in_words(words: Sequence[str]) -> set[int]:
    """The numbers ``words`` (a text's tokens) say in words: each number word's value, but a
    tens word and the unit after it ("forty nine", "cuarenta y nueve") only together (49,
    not 40 nor 9)."""
    said = [w for w in words if w not in _JOINERS]
    values = [NUMBER_WORDS.get(w) for w in said]
    found: set[int] = set()
    paired = False
    for tens, unit in pairwise([*values, None]):
        if paired:
            paired = False
            continue
        if tens is None:
            continue
        if unit is not None and tens % 10 == 0 and 20 <= tens < 100 and unit < 10:
            found.add(tens + unit)
            paired = True
        else:
            found.add(tens)
    return found


# Words that name a day by its distance from today ("tomorrow", "Friday"): a date worked out
# from them is in no text's digits. Portuguese names weekdays by ordinals ("segunda") and
# Spanish and German say "tomorrow" and "morning" alike: read as a day named, they leave a
# date undecided, never count it.
_RELATIVE_DAYS = """
    today tonight tomorrow yesterday monday tuesday wednesday thursday friday saturday sunday
    hoy mañana ayer lunes martes miércoles jueves viernes sábado domingo
    aujourd demain hier lundi mardi mercredi jeudi vendredi samedi dimanche
    heute morgen gestern übermorgen montag dienstag mittwoch donnerstag freitag samstag sonntag
    hoje amanhã ontem segunda terça quarta quinta sexta
    oggi domani ieri dopodomani lunedì martedì mercoledì giovedì venerdì sabato domenica
    आज कल परसों सोमवार मंगलवार बुधवार गुरुवार शुक्रवार शनिवार रविवार
    اليوم غدا غدًا أمس امس بكرة
"""
RELATIVE_DAY_WORDS: frozenset[str] = frozenset(_RELATIVE_DAYS.split())
# A week or a month names a date only beside a word saying which one ("next week", "la
# semana que viene", "cette semaine"): "a month" or "per week" names none.
_PERIOD_WORDS = """
    week weekend month semana mes semaine mois woche wochenende monat mês settimana mese
    हफ्ते हफ़्ते सप्ताह महीने
"""
_WHICH_WORDS = """
    next this last coming próxima próximo este esta pasada pasado viene prochaine prochain
    cette ce dernière dernier nächste nächsten diese diesen letzte letzten kommende passada
    passado vem prossima prossimo questa questo scorsa scorso अगले अगला इस पिछले
"""
_PERIODS = frozenset(_PERIOD_WORDS.split())
_WHICH_PERIOD = frozenset(_WHICH_WORDS.split())


def names_relative_day(words: Sequence[str]) -> bool:
    """Whether ``words`` (a text's tokens) name a day relative to today: "tomorrow", a
    weekday, or a week or month with a word saying which within two words of it."""
    for i, word in enumerate(words):
        if word in RELATIVE_DAY_WORDS:
            return True
        if word in _PERIODS and not _WHICH_PERIOD.isdisjoint(words[max(0, i - 2):i + 3]):
            return True
    return False


_HAN_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5,
               "六": 6, "七": 7, "八": 8, "九": 9}
_HAN_TENS = {"十": 10, "百": 100, "千": 1000}
_HAN_RUN = re.compile("[〇零一二两兩三四五六七八九十百千万萬]+")


def han_numbers(text: str) -> set[int]:
    """The numbers ``text`` writes in Han numerals, as Chinese and Japanese do ("三到五" says 3
    and 5, "四十九" 49, "两千零五" 2005); a run of bare digits says each and all of them
    ("三四天", three or four days; "二〇二四", 2024). Read inside words too ("一起" says 1):
    a number read is only ever one a text may say."""
    found: set[int] = set()
    for run in _HAN_RUN.findall(text):
        value = _han_value(run)
        if value is not None:
            found.add(value)
            continue
        digits = [_HAN_DIGITS[c] for c in run if c in _HAN_DIGITS]
        found.update(digits)
        if len(digits) == len(run):
            found.add(int("".join(map(str, digits))))
    return found


def _han_value(run: str) -> int | None:
    """A run's value, or None where two digits stand side by side."""
    total = section = 0
    digit: int | None = None
    for char in run:
        if char in "零〇" and (section or total):
            # A zero inside a number holds a place: 两千零五 is 2005.
            continue
        if char in _HAN_DIGITS:
            if digit is not None:
                return None
            digit = _HAN_DIGITS[char]
        elif char in _HAN_TENS:
            section += (1 if digit is None else digit) * _HAN_TENS[char]
            digit = None
        else:
            total += (section + (digit or 0) or 1) * 10000
            section, digit = 0, None
    return total + section + (digit or 0)
