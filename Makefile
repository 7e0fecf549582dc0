# The two commands of the README. Each creates or reuses .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

FLINK_VENV := .venv-flink
FLINK_STAMP := $(FLINK_VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test clean java vectors conformance flink-venv flink-check screenshots

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,spark,prove]'
	@# PyFlink's Python API only (23 MB, no JVM jars): tests certify genuine pyflink operators unmodified;
	@# what its pyflink.common/pyflink.datastream import (py4j, typing_extensions) comes with the test extra
	@$(PY) -m pip install --quiet --disable-pip-version-check --no-deps 'apache-flink==2.3.0'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

# Apache Flink itself (certify --on-flink, make flink-check, the tests that run jobs on Flink): PyFlink
# with its runtime in a virtual environment of its own (apache-beam's grpcio pin conflicts with
# pyspark[connect]); streamproof finds .venv-flink beside .venv.
$(FLINK_STAMP): pyproject.toml
	@test -x $(FLINK_VENV)/bin/python || $(PYTHON) -m venv $(FLINK_VENV)
	@$(FLINK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(FLINK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[flink]'
	@rm -f $(FLINK_VENV)/.installed-*
	@touch $(FLINK_STAMP)

flink-venv: $(FLINK_STAMP)

# Spark (the campaign and its tests) needs a Java 17+ runtime and the Flink conformance harness a
# JDK (javac): installed with apt-get when run as root, otherwise one clear line.
java:
	@if { [ -n "$$JAVA_HOME" ] && [ -x "$$JAVA_HOME/bin/javac" ]; } || command -v javac >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing a Java 17 JDK for Spark and the Flink harness (apt-get install openjdk-17-jdk-headless)"; \
	  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null; \
	else echo "streamproof: error: javac not found: Spark and the Flink harness need a Java 17+ JDK (apt-get install openjdk-17-jdk-headless as root, or set JAVA_HOME)" >&2; exit 1; fi

## make run: the main job: a Spark campaign over every registered property on embedded Spark
## (local[*]), sized to a few minutes on 2 cores; prints the summary table and the report path.
RUN_SEEDS ?= 64
RUN_EXAMPLES ?= 15
run: $(STAMP) java
	$(VENV)/bin/streamproof campaign --master 'local[*]' --campaign run --seeds $(RUN_SEEDS) --examples $(RUN_EXAMPLES) --out results

## make test: the test suite
test: java
	@$(MAKE) --no-print-directory -j2 $(STAMP) $(FLINK_STAMP)  # the two environments install side by side
	$(PY) -m pytest -q -p no:cacheprovider --hypothesis-profile=ci -n auto --maxprocesses 4 --dist worksteal --durations=25

## make conformance: random scenarios of every family on Flink's own classes (jars of PyPI's
## apache-flink-libraries, cached in ~/.cache/streamproof), the implementation and the model.
FLINK_VERSION ?= 2.3.0
CONFORM_EXAMPLES ?= 300
conformance: $(STAMP) java
	$(VENV)/bin/streamproof conform --flink $(FLINK_VERSION) --examples $(CONFORM_EXAMPLES) --out results/conformance

## make vectors: record the Flink trace vectors (streamproof/conformance/vectors) again on Flink
vectors: $(STAMP) java
	$(PY) -m streamproof.conformance.vectors --flink $(FLINK_VERSION)

## make flink-check: every job of examples/jobs/real/ on Apache Flink's MiniCluster (failure-free,
## paced, and with failures injected), each result against flink_expected.json (written first).
flink-check: $(STAMP) $(FLINK_STAMP) java
	$(PY) examples/jobs/flink_check.py --out results/flink-check.json

clean:
	rm -rf $(VENV) $(FLINK_VENV) build *.egg-info

## make screenshots: the certificate, campaign report and explain pages of a failure as headless
## Chromium shows them (PNGs in streamproof-out/screenshots), checked: failure highlighted, no raw
## Markdown, nothing wider than a 1280 px page. Installs Debian's chromium when run as root.
screenshots: $(STAMP)
	@command -v chromium >/dev/null || { if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "streamproof: error: chromium not found (apt-get install chromium as root)" >&2; exit 1; fi; }
	$(PY) -m tests.screenshots streamproof-out/screenshots
