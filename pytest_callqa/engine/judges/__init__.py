"""Judges: the protocol and the built-in implementations."""
