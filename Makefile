# The two commands a fresh machine needs: `make dev` (run Caldera locally) and `make test`.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: dev down test lint crds docs

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test,dev,bench]"
	touch $@

# deploy/devcluster/build.sh builds a target's Go binaries once per machine, one line each:
# `dev` the control plane `make dev` runs; `all` also helm and the Temporal server for the tests.
dev: $(BIN)/.installed
	deploy/devcluster/build.sh dev
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

# The documentation site (mkdocs.yml). Strict: a broken link or anchor, or a page left out of
# the nav, fails the build. build/ is ignored by git.
docs: $(BIN)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

# The e2e modules that run a second time with the Temporal server on PostgreSQL in place of
# the dev server (CALDERA_E2E_TEMPORAL=server): jobs, several workers, metrics.
SERVER_SUBSET = tests/e2e/test_job.py tests/e2e/test_workers.py tests/e2e/test_metrics.py

test: $(BIN)/.installed lint docs
	deploy/devcluster/build.sh all
	$(BIN)/pytest
	CALDERA_E2E_TEMPORAL=server $(BIN)/pytest $(SERVER_SUBSET)
