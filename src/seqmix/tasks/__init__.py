"""Dataset generators and loaders. Every batch is a pure function of (seed, step, rank)."""
