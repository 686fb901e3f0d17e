"""The engine's vocabulary: golden cases, results, metric definitions, judge requests and the
evaluation context.

Every module here imports only the standard library and pydantic, and nothing else of the
package, so every other layer can build on it.
"""
