# The two commands of the README. Each creates or reuses .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

## make run: the main job (every registered property checked; a Spark campaign once that issue lands)
run: $(STAMP)
	$(VENV)/bin/streamproof check

## make test: the test suite
test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider --hypothesis-profile=ci

clean:
	rm -rf $(VENV) build *.egg-info
