"""Judges: the offline heuristic judge and the LLM judge, each answering the requests tasks
plan (the protocol itself is ``engine.core.judging``)."""
