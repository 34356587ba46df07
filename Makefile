# configbags: `make run` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# The strict editable install links each module file; a module added or removed means
# reinstalling (an edit to an existing one does not).
MODULES := $(sort $(wildcard configbags/*.py */*.py */*/*.py */*/*/*.py))
LISTED  := $(VENV)/.module-list
MODEL  ?= models/llama-3.1-8b.json

.PHONY: FORCE setup gen gen-check lint test fuzz bench run clean

setup: $(STAMP)

$(LISTED): FORCE
	@mkdir -p $(VENV)
	@echo '$(filter-out tests/% bench/% .venv/% build/%,$(MODULES))' | cmp -s - $@ || echo '$(filter-out tests/% bench/% .venv/% build/%,$(MODULES))' > $@

$(STAMP): pyproject.toml constraints.txt $(LISTED)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]' --config-settings editable_mode=strict
	touch $(STAMP)

gen: setup
	$(VENV)/bin/configbags gen

gen-check: setup
	@$(VENV)/bin/configbags gen --check \
		|| { echo "generated/ is out of date with schema/; run: make gen"; exit 1; }

lint: setup
	$(PY) -m ruff check .
	$(PY) -m mypy -p configbags

test: gen-check lint
	$(PY) -m pytest -n 2

# The hostile-input suite with the long hypothesis profile (about ten minutes): overrides,
# CLI, config files, schema files and model config.json; any traceback fails it.
fuzz: setup
	CONFIGBAGS_FUZZ=long $(PY) -m pytest -q -n 2 -p no:cacheprovider tests/test_hostile_inputs.py

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

run: setup
	$(VENV)/bin/configbags plan --model-config $(MODEL) --device-memory 80GiB --tp-size 1 --page-size 16 --allocate meta

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .hypothesis .configbags-cache build dist *.egg-info
