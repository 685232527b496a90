# seqmix: `make reproduce` (the whole DAG at tiny scale) and `make test`. Both set everything up.
#
# torch: PyPI's Linux torch is the multi-GB CUDA build, so the pinned set asks for torch==2.13.0+cpu on Linux
# (torch==2.13.0 on macOS, whose PyPI wheel is the CPU build: environment markers in the requirements file).
# pip first tries the indexes it is configured with (CI finds the CPU wheel locally, offline); when that
# fails, the install is retried once with the PyTorch CPU index TORCH_CPU_INDEX added. To choose yourself:
#   make reproduce TORCH_INDEX=https://download.pytorch.org/whl/cpu     (extra index from the start)
#   make reproduce TORCH_WHEEL=/path/to/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl
# GPU/cluster users: REQUIREMENTS=none installs from pyproject.toml instead of the pinned CPU set.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
TORCH_INDEX ?=
TORCH_WHEEL ?=
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
REQUIREMENTS ?= envs/requirements-cpu.txt
PROFILE ?= profiles/local
# the scale to run; its results go to results/$(SCALE)/ beside the other scales' (seqmix.results)
SCALE ?= tiny
# other config keys, e.g. CONFIG='papers=[heads]' (one --config: a second would replace the first)
CONFIG ?=
SMK_ARGS ?=
PYTEST_ARGS ?=
# test processes (pytest-xdist); whole files go to one worker so a file's session fixtures are built once,
# and the six tiny-DAG files go together as one unit, first (tests/conftest.py), so one worker runs the DAG
# while the other runs the rest: 769 s against 920 s with the DAG files spread (one worker idled on the
# DAG's lock), same checkout, 2 cores, 2026-11-27. TEST_WORKERS=0 runs the suite in this process. Files go
# out in collection order, not xdist's default (most tests first).
TEST_WORKERS ?= 2

BIN := $(VENV)/bin
PIP_EXTRA := $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX),)
# a dropped connection resumes a download instead of failing the install (pip >= 25.1, which the upgrade brings)
PIP_NET := --retries 10 --resume-retries 10
STAMP := $(VENV)/.seqmix-installed
export PATH := $(abspath $(BIN)):$(PATH)
export MPLBACKEND := Agg

.PHONY: reproduce test test-fast venv report clean-results dryrun help
help:
	@echo "make reproduce   # venv + install + the whole DAG at tiny scale + report (results/tiny/)"
	@echo "make test        # venv + install + the test suite"
	@echo "make test-fast   # the unit lane: no Snakemake DAG, no SLURM (-m 'not integration and not cluster')"
	@echo "make reproduce SCALE=cpu   # results/cpu/, beside results/tiny/"
	@echo "make dryrun SCALE=cpu"
	@echo "make report      # rebuild results/tiny/report.html (e.g. after a plain snakemake run)"
	@echo "make venv        # only the venv and the install"
	@echo "make clean-results   # removes results/ and .snakemake/"

venv: $(STAMP)

$(STAMP): pyproject.toml $(REQUIREMENTS) Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(if $(TORCH_WHEEL),$(BIN)/python -m pip install -q $(TORCH_WHEEL),)
ifeq ($(REQUIREMENTS),none)
	$(BIN)/python -m pip install -q $(PIP_NET) $(PIP_EXTRA) -e '.[dev]'
else
	$(BIN)/python -m pip install -q $(PIP_NET) $(PIP_EXTRA) -r $(REQUIREMENTS) || { \
	  echo "seqmix: the pinned set did not resolve from pip's indexes; retrying with the PyTorch CPU index $(TORCH_CPU_INDEX)" >&2; \
	  $(BIN)/python -m pip install -q $(PIP_NET) $(PIP_EXTRA) --extra-index-url $(TORCH_CPU_INDEX) -r $(REQUIREMENTS); }
	$(BIN)/python -m pip install -q --no-deps -e .
endif
	touch $@

SMK := $(BIN)/snakemake --workflow-profile $(PROFILE) $(SMK_ARGS) --config scale=$(SCALE) $(CONFIG)

REPORT := results/$(SCALE)/report.html

# report.html is rebuilt only when a file under results/$(SCALE) is newer than it (a no-op run skips it)
reproduce: $(STAMP)
	$(SMK)
	@if [ -f $(REPORT) ] && [ -z "$$(find results/$(SCALE) -type f -newer $(REPORT) -print -quit)" ]; then \
	  echo "seqmix: $(REPORT) is up to date"; else $(SMK) --report $(REPORT); fi
	@$(BIN)/python -m seqmix where --results results

# the report alone, e.g. after a plain `snakemake` run
report: $(STAMP)
	$(SMK) --report $(REPORT)

dryrun: $(STAMP)
	$(SMK) -n

test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
	  -m "not integration and not cluster" $(PYTEST_ARGS)

clean-results:
	rm -rf results .snakemake
