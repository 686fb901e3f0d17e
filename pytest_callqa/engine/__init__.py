"""The metric engine: golden cases, task scorers, judges, embeddings and the scorecard.

Nothing under this package imports pytest; it is usable from a notebook or a script.
"""
