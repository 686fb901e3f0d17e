"""The package version (kept apart so the run can report it without importing the package
root)."""

__version__ = "0.1.0"
