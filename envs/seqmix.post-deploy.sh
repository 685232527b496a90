#!/usr/bin/env bash
# Snakemake runs this once, in the new environment of envs/seqmix.yaml (activated), from its working
# directory: the checkout's root, the only place the workflow runs from (it reads config/config.yaml there).
# It installs seqmix from that checkout, editable and without dependencies (seqmix.yaml lists them).
set -euo pipefail
if ! grep -qs '^name = "seqmix"$' pyproject.toml; then
  echo "seqmix post-deploy: $(pwd) is not the seqmix checkout; run snakemake from the checkout's root" >&2
  exit 1
fi
python -m pip install --no-deps -e .
