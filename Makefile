# configbags: `make run` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# The strict editable install links each module file; a module added or removed means
# reinstalling (an edit to an existing one does not).
MODULES := $(sort $(wildcard cli/*.py */*.py */*/*.py */*/*/*.py))
LISTED  := $(VENV)/.module-list
MODEL  ?= models/llama-3.1-8b.json
# The tests write nothing into the checkout, byte code included (ruff, mypy and hypothesis
# are pointed at the user's cache by pyproject.toml and tests/conftest.py). Not a
# PYTHONPYCACHEPREFIX: Python then ignores the byte code pip compiled into the venv, and
# where writing byte code is off (PYTHONDONTWRITEBYTECODE, as on CI machines) every spawned
# process compiles torch and the rest from source again (7.5 s against 2.4 s a start).
# So the tests only read byte code: the venv's, and the package's, compiled at setup.
EDITABLE = $(wildcard build/__editable__.configbags-*)
PYTEST := PYTHONDONTWRITEBYTECODE=1 $(PY) -m pytest

.PHONY: FORCE setup bytecode gen gen-check lint test quick fuzz bench run clean

setup: $(STAMP)

$(LISTED): FORCE
	@mkdir -p $(VENV)
	@echo '$(filter-out tests/% bench/% .venv/% build/%,$(MODULES))' | cmp -s - $@ || echo '$(filter-out tests/% bench/% .venv/% build/%,$(MODULES))' > $@

$(STAMP): pyproject.toml constraints.txt $(LISTED)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]' --config-settings editable_mode=strict
	touch $(STAMP)

# The package's byte code, beside the install's links in build/ (an edited module's is
# stale and compiled in memory; this recompiles only those).
bytecode: setup
	@$(PY) -m compileall -q $(EDITABLE)

gen: setup
	$(VENV)/bin/configbags gen

gen-check: setup
	@$(VENV)/bin/configbags gen --check \
		|| { echo "generated/ is out of date with schema/; run: make gen"; exit 1; }

# mypy's cache is the user's (pyproject.toml), one folder per checkout: two checkouts share
# module names but not files, and a cache entry of one misleads the other's incremental run.
MYPY_CACHE_DIR ?= $(HOME)/.cache/configbags/mypy/$(shell printf '%s' '$(CURDIR)' | cksum | cut -d' ' -f1)

lint: setup
	$(PY) -m ruff check .
	MYPY_CACHE_DIR=$(MYPY_CACHE_DIR) $(PY) -m mypy -p configbags

# Everything, as CI runs it (.ci/run). worksteal: the slow tests are uneven (2 s to 25 s),
# and an idle worker takes them over from a busy one.
test: gen-check lint bytecode
	$(PYTEST) -n 2 --dist worksteal

# The tests without the `slow` marker (spawned ranks, fault injection, servers), the
# hostile properties with the `quick` hypothesis profile (a quarter of `make test`'s
# examples): the edit-and-check loop, about a minute on two cores.
quick: bytecode
	CONFIGBAGS_FUZZ=quick $(PYTEST) -n 2 --dist worksteal -m 'not slow'

# The hostile-input suite (overrides, CLI, config files, env vars, schema files, model
# config.json, the ratchet's tree) with the long hypothesis profile, round after round with
# a new seed each, for FUZZ_SECONDS (ten minutes); the first failure or traceback stops it.
FUZZ_SECONDS ?= 600
fuzz: bytecode
	@start=$$(date +%s); end=$$((start + $(FUZZ_SECONDS))); round=0; \
	while [ $$(date +%s) -lt $$end ]; do \
	  round=$$((round + 1)); echo "== fuzz round $$round (seed $$round)"; \
	  CONFIGBAGS_FUZZ=long $(PYTEST) -q -n 2 -p no:cacheprovider --hypothesis-seed=$$round \
	    tests/test_hostile_inputs.py tests/test_hostile_config.py tests/test_hostile_context.py \
	    tests/test_hostile_files.py tests/test_hostile_doors.py tests/test_dump_roundtrip.py \
	    tests/test_ratchet_false_passes.py tests/test_ratchet_types.py tests/test_ratchet_flows.py tests/test_scopes_threads.py tests/test_serve_hostile.py \
	    -m 'not slow' || exit 1; \
	done; echo "fuzz: $$round rounds in $$(( $$(date +%s) - start )) s, no failure"

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

run: setup
	$(VENV)/bin/configbags plan --model-config $(MODEL) --device-memory 80GiB --tp-size 1 --page-size 16 --allocate meta

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .hypothesis .configbags-cache build dist *.egg-info
