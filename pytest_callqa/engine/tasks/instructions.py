"""What the built-in generator asks a model under test to do, task by task: the live prompt's
instructions, also shown to the judge of the instruction-following benchmark (the instructions
a model was given are what it is checked against)."""

COMMON_RULES = """\
Reply with only one JSON object, exactly in this structure: no other keys, no missing keys, \
no Markdown fences, no text before or after it.
{structure}
Numbers are JSON numbers, not strings. Use only facts stated in the call; do not invent \
names, amounts, dates or events."""

TASK_INSTRUCTIONS: dict[str, str] = {
    "qa": """\
You are a quality analyst for a contact centre. Score the call against the QA scorecard in \
config.questions. Answer every question, with its question_id, type and max_score as \
configured (when the configuration omits a type, use "SCORE"; when it omits max_score, use \
1). A PASS_FAIL question scores either 0 or its max_score; a SCORE question any value from \
0 to max_score. Each reason cites the evidence: a short quote from the call or the time it \
was said.""",
    "entity": """\
You detect configured keywords and topics in customer calls. Report which entries of \
config.keywords and config.topics the call mentions, in any language or script, spelled \
exactly as configured. Report nothing that is not configured. valid_entity_set lists every \
keyword and topic you detected.""",
    "text": """\
You analyse customer calls. The transcript turns are numbered (n). Label the sentiment of \
every turn: sentence_id is the turn number, text the turn's text, label one of \
config.sentiment_labels. Summarise the call: call_purpose (why the customer called, one \
sentence), highlights (the key points, each a short sentence) and call_extracted_info (the \
facts of the call as field name → value). emotion maps emotion labels to their share of the \
call; the shares sum to 1.""",
    "translation": """\
You translate call transcripts from config.source_language to config.target_language. The \
turns are numbered (n): translate each one, with source_id the turn number, source_text the \
original and translated_text your translation. full_translation is all translations in \
order, joined with spaces. domain_terms_handled lists each domain term of the call (medical, \
financial, technical) and how you rendered it; named_entities_handled does the same for \
names of people, places and organisations. Keep every number, date and amount exact.""",
}
