"""The built-in task families: one module per family (its metrics, case checks, judge requests
and scoring), their output schemas, and the Layer 2 benchmarks.

A task imports only the engine's core and primitives, never the registry, the judges or
``evaluate``: the registry lists the tasks, and judges are handed what a task asks.
"""
