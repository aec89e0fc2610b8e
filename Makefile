# Two entry points a fresh machine needs: `make demo` (the main job, cloud: local) and `make test`.
# Each creates .venv when missing and installs from this repo's own pyproject.toml.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch==2.13.0 (CPU) and fbgemm-gpu-cpu==1.8.0 come with the `local` extra; the cloud SDKs are
# not needed for the demo. torchrec's own metadata asks for the CUDA fbgemm-gpu, so it goes in
# with --no-deps after its CPU stand-in and the deps it imports (pyproject `local`).
TORCHREC := torchrec==1.8.0

$(VENV)/.demo-deps: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[local]'
	$(BIN)/python -m pip install -q --no-deps '$(TORCHREC)'
	touch $@

$(VENV)/.test-deps: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[all,dev]'
	$(BIN)/python -m pip install -q --no-deps '$(TORCHREC)'
	touch $@

# The first demo on a machine calibrates it (~1 min, cached in ~/.reclaunch/calibration), so
# `reclaunch plan examples/local-deepfm.yaml` predicts this host; later demos reuse the cache.
demo: $(VENV)/.demo-deps
	$(BIN)/reclaunch calibrate --if-needed
	$(BIN)/reclaunch up examples/local-deepfm.yaml --yes
	@echo ""
	@echo "next: run reclaunch from the venv: 'source $(VENV)/bin/activate' (or call $(BIN)/reclaunch),"
	@echo "      then 'reclaunch check', and 'reclaunch plan YOUR.yaml' (start from examples/local-deepfm.yaml)"

test: $(VENV)/.test-deps
	$(BIN)/python -m pytest

bench: $(VENV)/.test-deps
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info
