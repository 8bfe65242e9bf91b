# Trainer Portal — the two commands: `make run` and `make test`. Also: install, bench, lint.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
PYTHON := $(shell scripts/find-python)

.PHONY: install system-deps test-deps run test test-fast lint bench clean

# pytest-xdist workers: one per core by default (`make test PYTEST_WORKERS=0` runs serially).
PYTEST_WORKERS ?= auto

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	@test -n "$(PYTHON)" || (echo "No Python >= 3.12 found" >&2; exit 1)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

# Debian packages the browser tests and the kubectl smoke test need (chromium, kubectl).
system-deps:
	scripts/ensure-system-deps

# The OpenID provider the single sign-on tests start (npm oidc-provider, pinned by tests/sso/package-lock.json).
test-deps: tests/sso/node_modules/.installed

tests/sso/node_modules/.installed: tests/sso/package.json tests/sso/package-lock.json
	cd tests/sso && npm ci --no-audit --no-fund --loglevel=error
	touch $@

run: install
	scripts/run-embedded

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# The whole suite (what CI runs), spread over the cores; a worker takes the next test as it frees up.
test: install system-deps test-deps lint
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# The contributor's loop: everything but the browser, real-worker and measured-slow tests (tests/slow_tests.txt).
test-fast: install
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal -m "not slow and not browser and not worker" $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var staticfiles db.sqlite3
