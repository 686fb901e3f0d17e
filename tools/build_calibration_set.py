"""Build example_project/calibration/: golden cases with human_labels, and the labelled
outputs (model ``human``), from the real dialogues and translations in ../shared/data.

    python tools/build_calibration_set.py [--data ../shared/data]

Deterministic: the same data gives the same files. How each label is derived is written in
example_project/calibration/README.md and in each label's ``note``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "example_project" / "calibration"
DEFAULT_DATA = ROOT.parent / "shared" / "data"
MODEL = "human"
MODELINE = "# yaml-language-server: $schema=../../cases/callqa-case.schema.json\n"
LICENCES = ("ABCD_MIT.txt", "DialogStudio_Apache-2.0.txt", "SGD_CC-BY-SA-4.0.txt",
            "TICO-19_CC0.txt")

# Per dialogue: the intents its dataset annotates (ABCD's intent, SGD's dialogue intents,
# Harper Valley's caller task), in one shared vocabulary; the customer turn that states why
# they called (picked by reading each dialogue) and the intent that turn asks for.
INTENTS: dict[str, tuple[frozenset[str], str, str]] = {
    "abcd-3592": (frozenset({"return_item"}), "I need to return an item", "return_item"),
    "abcd-9489": (frozenset({"refund_status"}), "check on the status of a refund",
                  "refund_status"),
    "abcd-3695": (frozenset({"promo_code_expiry"}), "I've got a promo code",
                  "promo_code_expiry"),
    "abcd-5798": (frozenset({"change_shipping_address"}), "change my shipping deatails",
                  "change_shipping_address"),
    "abcd-3647": (frozenset({"shipping_cost"}), "Do you know how much that costs?",
                  "shipping_cost"),
    **{dialogue: (frozenset({"check_balance", "transfer_money"}), request, "check_balance")
       for dialogue, request in (
           ("sgd-5_00000", "Please help me check the balance"),
           ("sgd-5_00001", "Check the balance on my savings account"),
           ("sgd-5_00002", "I want to check the balance"),
           ("sgd-5_00003", "Please check the balance on my savings account"),
           ("sgd-5_00004", "Can you check my savings account?"),
           ("sgd-32_00011", "What's my balance?"),
           ("sgd-32_00012", "Can you check my balance of checking account?"),
           ("sgd-32_00013", "I would like to check my balance"),
           ("sgd-32_00014", "Could you please check my balance?"),
           ("sgd-32_00015", "I need to check my savings account balance"))},
    "hvb-0002f70f7386445b": (frozenset({"replace_card"}), "i lost my debit card",
                             "replace_card"),
    "hvb-0091a706bc604188": (frozenset({"check_balance"}), "i need to check my account balance",
                             "check_balance"),
    "hvb-00d676d7058c49bb": (frozenset({"transfer_money"}), "i would like to transfer money",
                             "transfer_money"),
    "hvb-010eaccb7a23436f": (frozenset({"schedule_appointment"}),
                             "i would like to schedule an appointment", "schedule_appointment"),
    "hvb-0126ffdce48049a9": (frozenset({"branch_hours"}), "i wanted to know the local branch",
                             "branch_hours"),
}
# The call purpose each intent set stands for, written from the datasets' intent names
# (ABCD return_size, refund_status, timing_4 "promo code", manage "shipping address",
# pricing_3 "shipping cost"; SGD CheckBalance + TransferMoney; Harper Valley task types).
PURPOSES: dict[frozenset[str], str] = {
    frozenset({"return_item"}): "Return an item that arrived in the wrong size.",
    frozenset({"refund_status"}): "Find out the status of a refund.",
    frozenset({"promo_code_expiry"}): "Ask when a promo code expires.",
    frozenset({"change_shipping_address"}): "Change the shipping address of an order.",
    frozenset({"shipping_cost"}): "Ask what overnight shipping costs.",
    frozenset({"check_balance", "transfer_money"}): "Check account balances and transfer "
                                                    "money.",
    frozenset({"replace_card"}): "Replace a lost debit card.",
    frozenset({"check_balance"}): "Check an account balance.",
    frozenset({"transfer_money"}): "Transfer money between accounts.",
    frozenset({"schedule_appointment"}): "Schedule an appointment at the bank.",
    frozenset({"branch_hours"}): "Get the opening hours of the local branch.",
}
SOURCES = {
    "abcd": "ABCD via salesforce/DialogStudio (task-oriented-dialogues/ABCD/"
            "original_examples.json), dialogue {id} (MIT)",
    "sgd": "Schema-Guided Dialogue (google-research-datasets/dstc8-schema-guided-dialogue), "
           "Banks dialogue {id} (CC BY-SA 4.0)",
    "hvb": "Harper Valley Bank (cricketclub/gridspace-stanford-harper-valley), call {id} "
           "(Apache-2.0, © 2020 Gridspace Inc.)",
}
TICO = ("TICO-19 via tico-19/tico-19.github.io (data/TM/all.en-hi.tmx, CMU doctor-patient "
        "subset), segment {id} (CC0 1.0)")
_WORD = re.compile(r"[A-Za-z]{4,}")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _request(dialogue: dict[str, Any]) -> str:
    marker = INTENTS[dialogue["id"]][1].lower()
    return next(t["text"] for t in dialogue["turns"]
                if t["speaker"] == "customer" and marker in t["text"].lower())


def _highlights(dialogue: dict[str, Any], request: str) -> list[str]:
    """The two customer turns with the most words of four letters or more (ties: first)."""
    turns = [t["text"] for t in dialogue["turns"]
             if t["speaker"] == "customer" and t["text"] != request]
    return sorted(turns, key=lambda t: -len(_WORD.findall(t)))[:2]


def _intent_label(own: frozenset[str], asked: str) -> tuple[float, str]:
    if own == {asked}:
        return 1.0, f"the purpose asks for {asked}, the call's only annotated intent"
    if asked in own:
        return 0.5, (f"the purpose asks for {asked}, one of the call's annotated intents "
                     f"({', '.join(sorted(own))}): right domain, incomplete")
    return 0.0, (f"the purpose asks for {asked}; the call's annotated intents are "
                 f"{', '.join(sorted(own))}")


def _partner(dialogues: list[dict[str, Any]], index: int) -> dict[str, Any]:
    """The next dialogue (cyclically) whose annotated intents share none with this one's."""
    own = INTENTS[dialogues[index]["id"]][0]
    for step in range(1, len(dialogues)):
        other = dialogues[(index + step) % len(dialogues)]
        if not own & INTENTS[other["id"]][0]:
            return other
    raise ValueError(f"no dialogue with other intents than {dialogues[index]['id']}")


def intent_cases(dialogues: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    """Per dialogue, two text cases: the call summarised by its own customer's words, and
    by the words of a customer of a call about something else."""
    built = []
    for index, dialogue in enumerate(dialogues):
        did = dialogue["id"]
        family = did.split("-")[0]
        own_intents = INTENTS[did][0]
        turns = {_norm(t["text"]) for t in dialogue["turns"]}
        for variant, source in (("own", dialogue), ("other", _partner(dialogues, index))):
            request = _request(source)
            facts = [request, *_highlights(source, request)]
            in_call = sum(_norm(f) in turns for f in facts)
            intent, why = _intent_label(own_intents, INTENTS[source["id"]][2])
            where = ("this call" if variant == "own" else f"another call ({source['id']})")
            case = {
                "id": f"cal-intent-{did}-{variant}",
                "task": "text",
                "description": f"{did} summarised with customer turns from {where}.",
                "source": SOURCES[family].format(id=did),
                "tags": ["calibration", family, variant],
                "transcript": [{"speaker": t["speaker"], "text": t["text"]}
                               for t in dialogue["turns"]],
                "expected_outcome": {
                    "sentiment": [],
                    "summary": {"call_purpose": PURPOSES[own_intents], "highlights": [],
                                "call_extracted_info": {}},
                    "emotion": {},
                },
                "human_labels": {
                    "call_intent_match": {
                        "value": intent,
                        "labeler": f"{family.upper()} intent annotation",
                        "note": f"call_purpose is a customer turn of {where}: {why}"},
                    "fabrication_free_rate": {
                        "value": round(in_call / len(facts), 4),
                        "labeler": "provenance of the summary's statements",
                        "note": f"{in_call} of {len(facts)} statements (purpose, highlights) "
                                f"are turns of this call; the others were said in {where}"},
                },
            }
            output = {"sentiment": [],
                      "summary": {"call_purpose": request, "highlights": facts[1:],
                                  "call_extracted_info": {}},
                      "emotion": {}}
            built.append((case, output))
    return built


def translation_cases(pairs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    """One case per English sentence; even positions get their own professional Hindi
    translation, odd ones the translation of the sentence half the list away."""
    hindi = [p for p in pairs if p["tgt_lang"] == "hi"]
    built = []
    for index, pair in enumerate(hindi):
        shifted = index % 2 == 1
        given = hindi[(index + len(hindi) // 2) % len(hindi)] if shifted else pair
        label = 0.0 if shifted else 1.0
        note = (f"the translation of another sentence ({given['id']}: {given['src']!r})"
                if shifted else "the TICO-19 professional translation of this sentence")
        case = {
            "id": f"cal-translation-hi-{pair['id'].replace('CMU_1:', 'cmu1-')}",
            "task": "translation",
            "description": "One English sentence; the output is " + note + ".",
            "source": TICO.format(id=pair["id"]),
            "tags": ["calibration", "tico-19", "hindi", "shifted" if shifted else "own"],
            "transcript": [{"speaker": "speaker", "text": pair["src"]}],
            "config": {"source_language": "en", "target_language": "hi"},
            # The only Hindi reference is the output under judgement, so the meaning is
            # checked against the English source itself (a cross-lingual comparison).
            "expected_outcome": {
                "full_translation": pair["src"],
                "sentence_translations": [{"source_id": 1, "source_text": pair["src"],
                                           "translated_text": pair["src"]}],
                "domain_terms_handled": [], "named_entities_handled": []},
            "human_labels": {"sentence_meaning_accuracy": {
                "value": label, "labeler": "TICO-19 professional translators",
                "note": f"the output is {note}"}},
        }
        output = {"full_translation": given["ref"],
                  "sentence_translations": [{"source_id": 1, "source_text": pair["src"],
                                             "translated_text": given["ref"]}],
                  "domain_terms_handled": [], "named_entities_handled": []}
        built.append((case, output))
    return built


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _write_cases(path: Path, cases: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(cases, allow_unicode=True, sort_keys=False, width=100)
    path.write_text(MODELINE + text, encoding="utf-8")


def build(data: Path, out: Path = OUT) -> int:
    dialogues = _read_jsonl(data / "dialogues.jsonl")
    missing = [d["id"] for d in dialogues if d["id"] not in INTENTS]
    if missing:
        raise SystemExit(f"no intent table entry for {', '.join(missing)}")
    groups = {"call-intent.yaml": intent_cases(dialogues),
              "translation-hi.yaml": translation_cases(_read_jsonl(data / "parallel.jsonl"))}
    for folder in ("cases", "outputs"):
        shutil.rmtree(out / folder, ignore_errors=True)
    labels = 0
    for name, built in groups.items():
        _write_cases(out / "cases" / name, [case for case, _ in built])
        for case, output in built:
            labels += len(case["human_labels"])
            target = out / "outputs" / MODEL / f"{case['id']}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(output, indent=2, ensure_ascii=False) + "\n",
                              encoding="utf-8")
    (out / "licenses").mkdir(parents=True, exist_ok=True)
    for name in LICENCES:
        shutil.copy(data / name, out / "licenses" / name)
    return labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the shared data directory (dialogues.jsonl, parallel.jsonl)")
    args = parser.parse_args()
    labels = build(args.data)
    print(f"wrote {OUT.relative_to(ROOT)}: {labels} labels")


if __name__ == "__main__":
    main()
