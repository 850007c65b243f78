"""Extraction: turns exchanges into fact records. The built-in extractors (perfect,
consolidating, noisy) register themselves in EXTRACTORS when membench.plugins loads them."""
