# Everything runs in a virtual environment of its own, .venv (made on first use), so nothing is installed into
# the system's Python; `make test PYTHON=python3` uses another interpreter instead.
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
PIP = $(PYTHON) -m pip
TORCH_VERSION ?= 2.13.0
# the venv's console scripts (ding_lite) first on PATH, for the commands and the tests that call them
RUN = PATH="$(abspath $(dir $(PYTHON))):$$PATH" $(PYTHON)
# what each target needs: the demo only plots; the tests run every env family, Ray, EnvPool, videos, W&B, Optuna
# and PettingZoo
EXTRAS_demo = plot
EXTRAS_test = test,box2d,mujoco,parallel,envpool,minigrid,plot,video,track,docs,tune,marl
EXTRAS_docs = docs
# an install is done again only when setup.py changes (a stamp beside the interpreter, per target)
STAMP = $(dir $(PYTHON)).ding_lite-installed-
TEST_WORKERS ?= 2
DEMO_CONFIG = dizoo_configs/pendulum_sac_config.py
DEMO_RUN = pendulum_sac_seed0

.PHONY: install test demo bench docs

$(VENV)/bin/python:
	python3 -m venv $(VENV)

# torch first: a bare `torch` requirement with no torch installed would pull a multi-GB CUDA build.
$(STAMP)%: setup.py $(filter $(VENV)/bin/python,$(PYTHON))
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) install "torch==$(TORCH_VERSION)"
	$(PIP) install -q -e ".[$(EXTRAS_$*)]"
	@$(PYTHON) -m entry.tools.catalog > /dev/null  # what `ding_lite list` and `config` answer without torch
	@touch $@

install: $(STAMP)test

# two test processes (pytest-xdist): the suite in about 5 minutes on 2 cores; `make test TEST_WORKERS=0` runs it in one
test: $(STAMP)test
	$(RUN) -m pytest tests -n $(TEST_WORKERS)

# Ctrl-C stops the run with a resume point (it prints the command that continues it) and still draws the curve;
# `make demo ARGS="--resume FOLDER"` continues an interrupted demo (the command it prints names its folder).
demo: $(STAMP)demo
	@trap 'true' INT; DING_LITE_RESUME_COMMAND='make demo ARGS="--resume {run}"' $(RUN) -m entry.cli -m serial -c $(DEMO_CONFIG) -s 0 $(ARGS); status=$$?; \
	run=$$(ls -td $(DEMO_RUN)*/ 2>/dev/null | head -1); \
	if [ -n "$$run" ] && [ -s "$${run}log/evaluator.csv" ]; then $(RUN) -m entry.cli plot $$run -o $${run}curve.png; fi; \
	exit $$status

# the documentation site from docs/ into site/ (a broken link or API reference fails the build)
docs: $(STAMP)docs
	NO_MKDOCS_2_WARNING=1 $(RUN) -m mkdocs build --strict

bench: $(STAMP)test
	for f in tests/benchmark/bench_*.py; do $(RUN) -m tests.benchmark.$$(basename $$f .py) || exit 1; done
