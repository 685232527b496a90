"""One package per paper, ``seqmix.papers.<paper>``: its ``ARTEFACTS`` maps the names declared in the
``artefacts:`` block of config/papers/<paper>.yaml to ``fn(spec, out) -> None`` (spec: seqmix.config.artefacts),
its ``theory/`` holds the paper's closed forms (pure math), and ``analysis.schema.yaml`` types its
``analysis:`` block. A paper kept out of this tree declares its package under the entry-point group
``seqmix.papers`` (``seqmix.registry.paper_module``). Papers never import each other (pyproject.toml)."""
