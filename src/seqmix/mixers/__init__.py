"""Sequence mixers (nn.Modules), one file per family, registered by name."""
