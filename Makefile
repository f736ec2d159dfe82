PYTHON ?= python3
PIP = $(PYTHON) -m pip
TORCH_VERSION ?= 2.13.0

.PHONY: install test demo bench

# torch first: a bare `torch` requirement with no torch installed would pull a multi-GB CUDA build.
install:
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) install "torch==$(TORCH_VERSION)"
	$(PIP) install -q -e ".[test,box2d,mujoco,parallel,envpool,plot,video,track]"

test: install
	$(PYTHON) -m pytest tests

demo: install
	$(PYTHON) -m entry.cli -m serial -c dizoo_configs/pendulum_sac_config.py -s 0
	@run=$$(ls -td pendulum_sac_seed0*/ | head -1); $(PYTHON) -m entry.cli plot $$run -o $${run}curve.png

bench: install
	for f in tests/benchmark/bench_*.py; do $(PYTHON) -m tests.benchmark.$$(basename $$f .py) || exit 1; done
