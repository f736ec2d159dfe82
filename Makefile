# Everything runs in a virtual environment of its own, .venv (made on first use), so nothing is installed into
# the system's Python; `make test PYTHON=python3` uses another interpreter instead.
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
PIP = $(PYTHON) -m pip
TORCH_VERSION ?= 2.13.0
# the venv's console scripts (ding_lite) first on PATH, for the commands and the tests that call them
RUN = PATH="$(abspath $(dir $(PYTHON))):$$PATH" $(PYTHON)

.PHONY: install test demo bench

$(VENV)/bin/python:
	python3 -m venv $(VENV)

# torch first: a bare `torch` requirement with no torch installed would pull a multi-GB CUDA build.
install: $(filter $(VENV)/bin/python,$(PYTHON))
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) install "torch==$(TORCH_VERSION)"
	$(PIP) install -q -e ".[test,box2d,mujoco,parallel,envpool,plot,video,track]"

test: install
	$(RUN) -m pytest tests

demo: install
	$(RUN) -m entry.cli -m serial -c dizoo_configs/pendulum_sac_config.py -s 0
	@run=$$(ls -td pendulum_sac_seed0*/ | head -1); $(RUN) -m entry.cli plot $$run -o $${run}curve.png

bench: install
	for f in tests/benchmark/bench_*.py; do $(RUN) -m tests.benchmark.$$(basename $$f .py) || exit 1; done
