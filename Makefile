# rotorid — newcomer entry points. Every target creates .venv on first use.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test lint format bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rotorid demo --out demo-out

# The report tests drive real headless Chromium; install it once (Debian packages) if missing.
# --dist loadscope keeps each test file on one worker, so a module's fixtures (a simulated flight
# and its identification, a browser) are built once, not once per worker; --no-loadscope-reorder
# keeps tests/conftest.py's order (files with slow tests first), not xdist's by test count, which put
# the few-test heavy files last and left one worker waiting on them.
test: $(STAMP)
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium and chromium-driver (Debian) for the report tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver \
	    || { echo "could not install chromium; the browser tests need /usr/bin/chromium and /usr/bin/chromedriver"; exit 1; }; \
	else echo "no apt-get: install chromium and chromedriver yourself, else the browser tests are skipped"; fi
	@$(BIN)/python -m pytest -n 2 --dist loadscope --no-loadscope-reorder -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: treat as a failure"; fi; exit $$rc

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) demo-out benchmarks/results .pytest_cache
