PYTHON ?= python3
PIP = $(PYTHON) -m pip
TORCH_VERSION ?= 2.13.0

.PHONY: install test demo bench

# torch first: a bare `torch` requirement with no torch installed would pull a multi-GB CUDA build.
install:
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) install "torch==$(TORCH_VERSION)"
	$(PIP) install -q -e ".[test]"

test: install
	$(PYTHON) -m pytest tests

bench: install
	$(PYTHON) -m pytest tests/benchmark -s -p no:cacheprovider
