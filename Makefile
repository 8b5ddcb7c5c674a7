# The two commands a fresh machine needs: `make dev` (run Caldera locally) and `make test`.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: dev down test lint binaries crds

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test,dev,bench]"
	touch $@

binaries:
	deploy/devcluster/build.sh >/dev/null

dev: $(BIN)/.installed binaries
	$(BIN)/caldera dev up

down: $(BIN)/.installed
	$(BIN)/caldera dev down

lint: $(BIN)/.installed
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy .
	$(BIN)/lint-imports --no-cache

crds: $(BIN)/.installed
	$(BIN)/caldera crds
	$(BIN)/caldera crds --out deploy/helm/caldera/crds

# The e2e modules that run a second time with the Temporal server on PostgreSQL in place of
# the dev server (CALDERA_E2E_TEMPORAL=server): jobs, several workers, metrics.
SERVER_SUBSET = tests/e2e/test_job.py tests/e2e/test_workers.py tests/e2e/test_metrics.py

test: $(BIN)/.installed binaries lint
	$(BIN)/pytest
	CALDERA_E2E_TEMPORAL=server $(BIN)/pytest $(SERVER_SUBSET)
