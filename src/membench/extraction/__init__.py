"""Extraction: turns exchanges into fact records. Importing the package registers the
built-in extractors (perfect, consolidating, noisy) in EXTRACTORS."""

from membench.extraction import builtin as _builtin  # noqa: F401  (registers them)
