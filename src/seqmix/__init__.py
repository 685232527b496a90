"""seqmix: one library and one pipeline for five papers on long-range memory in sequence mixers."""

__version__ = "0.1.0"

PAPERS = ("sessa", "b2s6", "rotations", "heads", "superposition")
