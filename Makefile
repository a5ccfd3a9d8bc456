# Two entry points on a fresh machine: `make demo` and `make test`. Both bootstrap what they need.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.irprof-installed
DEMO   ?= demo-run
FRAMEWORK ?= tf

.PHONY: demo test lint typecheck unit bench mutation sysdeps clean help

help:
	@echo "make demo   capture, annotate and report on the bundled example (FRAMEWORK=tf|jax|torch|iree|onnx)"
	@echo "make test   lint, type check and the whole test suite"
	@echo "make bench  reader and annotate benchmarks"
	@echo "make mutation  mutation testing of the core modules (slow; not part of make test)"

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,dev,zoo]'
	touch $(STAMP)

# Debian packages: graphviz for layout, chromium for the report's browser tests.
sysdeps:
	@command -v dot >/dev/null && command -v chromium >/dev/null || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz chromium >/dev/null; }

demo: $(STAMP) sysdeps
	$(BIN)/irprof demo --framework $(FRAMEWORK) -o $(DEMO)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) sysdeps
	$(BIN)/pytest -q -p no:cacheprovider -rs --cov --cov-report=
	@echo "line and branch coverage of src/irprof: $$($(BIN)/coverage report --format=total)%"

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_readers.py
	$(BIN)/python benchmarks/bench_annotate.py
	$(BIN)/python benchmarks/bench_views.py

# Mutation testing, one module at a time, of the modules whose bugs change numbers users read
# (benchmarks/mutation_run.py): only those changed since benchmarks/mutation_results.tsv was
# written; MUTATION_ARGS=--all for every module, MUTATION_ARGS="--module analyses/ranks.py" for
# one. mutmut forks per mutant: MLIR runs single-threaded (a fork after its thread pool hangs).
mutation: $(STAMP)
	IRPROF_MLIR_THREADS=0 $(BIN)/python benchmarks/mutation_run.py $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .mypy_cache .ruff_cache mutants mutation-survivors.txt
