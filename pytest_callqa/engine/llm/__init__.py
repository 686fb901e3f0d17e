"""Talking to OpenAI-compatible chat endpoints: the runner with its concurrency, rate, budget
and retry rules, and the crash-safe reply cache shared by xdist workers.

Used by the LLM judge and by live generation alike; nothing here knows about tasks.
"""
