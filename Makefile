# pubsift — two commands: `make run` and `make test` (each sets up .venv when needed).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip

.PHONY: run test test-fast lint bench docs install install-dev clean

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit("pubsift needs Python >= 3.11, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -qq --upgrade pip

# Reinstall only when pyproject.toml or the compiled walk's sources changed (the stamp
# records the last install; the install builds models/records/_walk.pyx, _flat.pyx and
# adapters/broker/_split.pyx in place).
$(VENV)/.stamp-run: pyproject.toml setup.py models/records/_walk.pyx models/records/_scan.pxi models/records/_flat.pyx adapters/broker/_split.pyx | $(PY)
	$(PIP) install -qq -e '.[spark]'
	@touch $@

$(VENV)/.stamp-dev: pyproject.toml setup.py models/records/_walk.pyx models/records/_scan.pxi models/records/_flat.pyx adapters/broker/_split.pyx | $(PY)
	$(PIP) install -qq -e '.[dev]'
	@touch $@ $(VENV)/.stamp-run

install: $(VENV)/.stamp-run
install-dev: $(VENV)/.stamp-dev

## The main job on the embedded default (see README: what `make run` shows).
run: $(VENV)/.stamp-run
	$(VENV)/bin/pubsift route examples/job.toml --out out --overwrite

## The whole suite (Spark and slow tests included), as CI runs it: hypothesis derandomized
## (tests/conftest.py, profile "ci"); run pytest directly to explore new random examples.
test: lint
	PUBSIFT_HYPOTHESIS_PROFILE=ci PYTHONHASHSEED=0 $(PY) -m pytest -q -n 2 --dist loadgroup

## Lint, format and type checks (pyproject: [tool.ruff], [tool.mypy]); `make test` runs it first.
## mypy reads the packages through a link tree build/typecheck/pubsift/<package> -> <folder>,
## made from [tool.setuptools.package-dir] (mypy cannot follow that mapping by itself).
lint: $(VENV)/.stamp-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@$(PY) -c 'import tomllib; dirs = tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["package-dir"]; \
	  print(*(f"{p} {d}" for p, d in dirs.items()), sep="\n")' | while read pkg dir; do \
	  link=build/typecheck/$$(echo $$pkg | tr . /); mkdir -p $$(dirname $$link) && ln -sfn $(CURDIR)/$$dir $$link; done
	$(VENV)/bin/mypy

## The quick set: skips tests marked spark or slow.
test-fast: $(VENV)/.stamp-dev
	PUBSIFT_HYPOTHESIS_PROFILE=ci PYTHONHASHSEED=0 $(PY) -m pytest -q -n 2 -m "not spark and not slow"

## Benchmarks (figures and ratios against a baseline measured in the same run), all
## quick; one table in bench/results.md, copied into README's benchmark table.
BENCHES := records_match records_relations xml_match xml_covering concepts_match routing network auth codecs \
           adapters records_batch spark_route spark_job brokers eventbridge scan monitor history report
bench: $(VENV)/.stamp-dev
	@mkdir -p bench/results
	@for b in $(BENCHES); do echo "== bench/$$b.py --quick"; \
	  $(PY) bench/$$b.py --quick --json bench/results/$$b.json || exit 1; done
	$(PY) bench/table.py $(BENCHES:%=bench/results/%.json) --out bench/results.md --readme README.md

## The API reference generated from the docstrings (pdoc, in the dev extra) of the public
## modules: build/docs/api/index.html (build/ is not committed).
DOC_MODULES := pubsift pubsift.core pubsift.models.records pubsift.models.xml pubsift.models.concepts \
               pubsift.models.constraints pubsift.adapters pubsift.adapters.readers \
               pubsift.adapters.broker.client
docs: $(VENV)/.stamp-dev
	rm -rf build/docs/api
	$(VENV)/bin/pdoc --docformat restructuredtext -o build/docs/api $(DOC_MODULES)
	@echo "the API reference: build/docs/api/index.html"

clean:
	rm -rf $(VENV) build *.egg-info
