# configbags: `make run` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
MODEL  ?= models/llama-3.1-8b.json

.PHONY: setup gen gen-check lint test bench run clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
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

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

run: setup
	$(VENV)/bin/configbags plan --model-config $(MODEL) --device-memory 80GiB --tp-size 1 --page-size 16 --allocate meta

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .hypothesis .configbags-cache build dist *.egg-info
