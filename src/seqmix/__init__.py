"""seqmix: one library and one pipeline for five papers on long-range memory in sequence mixers."""

__version__ = "0.1.0"
