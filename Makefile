# The testbed's entry points. `make setup` needs root; see README.md.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
TESTBED := $(VENV)/bin/testbed
CAMPAIGN ?= profiles/campaigns/paper.toml
CORPUS ?= recordings/corpus
RESULTS ?= results/$(basename $(notdir $(CAMPAIGN)))
REPORT_OUT ?= reports/$(notdir $(RESULTS))
# rustup's cargo if present, else Debian's (the same choice as setup/setup.sh)
# RUST_LINT=no leaves rustfmt and clippy out of `make lint`: the image's toolchain
# (Debian's rustc-web) ships neither; the sources are linted where the image is built.
RUST_LINT ?= yes
# The Rust build tree `make setup` used (its cache outside the checkout, see setup.sh),
# so that clippy and the Rust tests reuse what the setup compiled.
CARGO_TARGET_CACHE := $(shell cat h3server/target/cargo-target-dir 2>/dev/null)
ifneq ($(CARGO_TARGET_CACHE),)
export CARGO_TARGET_DIR := $(CARGO_TARGET_CACHE)
endif
CARGO ?= $(shell if [ -x "$${CARGO_HOME:-$$HOME/.cargo}/bin/cargo" ]; then echo "$${CARGO_HOME:-$$HOME/.cargo}/bin/cargo"; else command -v cargo; fi)

# mypy's cache beside root's build cache when that is writable here (make setup makes
# it), so that a fresh clone checks again only the files whose content differs (mypy
# compares each file's hash): ~25 s to ~1 s in `make lint`. MYPY_CACHE= uses .mypy_cache.
MYPY_CACHE ?= $(shell d=/var/cache/testbed; [ -d $$d/setup ] && [ -w $$d/setup ] && echo $$d/mypy)

# JUNIT_DIR=DIR: each pytest stage also writes DIR/STAGE.xml (JUnit XML, every test's
# time); .ci/run sets it and prints the summary (.ci/summary.py).
JUNIT_DIR ?=
JUNIT = $(if $(JUNIT_DIR),--junitxml=$(JUNIT_DIR)/$@.xml)

.PHONY: setup test test-long lint docs unit e2e analysis-install-test notebook corpus experiment report faults doctor bench clean image image-test reference-report reference-checkpoint replication report-screenshots

setup:
	bash setup/setup.sh

test: lint docs unit e2e faults

# ruff over all Python; mypy over testbed/, analysis/ and results_contract/ (its scope and strictness:
# [tool.mypy] in pyproject.toml); rustfmt and clippy over h3server/.
lint:
	$(VENV)/bin/ruff check --no-cache testbed analysis results_contract tests bench recordings corpus
	$(VENV)/bin/mypy $(if $(MYPY_CACHE),--cache-dir $(MYPY_CACHE))
ifneq ($(RUST_LINT),no)
	cd h3server && $(CARGO) fmt --all --check
	cd h3server && $(CARGO) clippy --release --locked --all-targets -q -- -D warnings
else
	@echo "lint: rustfmt and clippy not run (RUST_LINT=no)"
endif

# The reference pages (docs/, mkdocs.yml) built strictly into a temporary folder:
# a broken link or anchor, or a page missing from the nav, fails.
docs:
	@site=$$(mktemp -d) && trap 'rm -rf "$$site"' EXIT && \
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir "$$site"

# Unit tests in two worker processes (pytest-xdist; they share no state: each uses its
# own tmp_path), the slowest ten named so a slow-down shows in CI's log.
unit:
	$(PY) -m pytest -q -n 2 --durations=10 -m "not e2e and not long" $(JUNIT) tests
	cd h3server && $(CARGO) test --release --locked -q

e2e:
	$(PY) -m pytest -q --durations=15 -m "e2e and not faults and not long" $(JUNIT) tests

# `pip install .[analysis]` in a fresh venv, then `testbed report` and the notebook over
# the fixture from it (part of `make e2e`; ~1-2 min with a warm pip cache).
analysis-install-test:
	$(PY) -m pytest -q tests/e2e/test_analysis_install.py

# notebooks/campaign.ipynb re-executed on the test fixture and stored with its outputs
# (tests/unit/test_notebook.py fails when the stored outputs are stale).
notebook:
	$(PY) tests/support/notebook_run.py notebooks/campaign.ipynb

doctor:
	$(TESTBED) doctor

# The offline corpus (corpus/, docs/recording-and-corpus.md): two sets of 38 sites,
# paper (like Wolsing et al.'s 2019 pages, docs/corpus-paper.md) and today (today's web,
# docs/corpus-today.md), recorded into $(CORPUS)/paper/ and $(CORPUS)/today/. Packages
# come from the npm registry once (cached); a second run finds every site up to date
# and records nothing.
corpus:
	$(PY) -m corpus build --out $(CORPUS)

# A campaign over the corpus (paper.toml is: paper/*) builds it first if it is missing.
experiment:
	@if grep -qE '"(corpus|paper|today)/' $(CAMPAIGN); then $(MAKE) --no-print-directory corpus; fi
	$(TESTBED) run $(CAMPAIGN) --out $(RESULTS)

report:
	$(TESTBED) report $(RESULTS) --out $(REPORT_OUT)

# The reference campaign (profiles/campaigns/reference.toml) kept in reference/: its
# report with the paper's findings, regenerated from the committed data (no
# measurement); a checkpoint of the running campaign's results folder into reference/;
# REPLICATION.md's findings block from the same computation.
REFERENCE ?= reference
REFERENCE_RESULTS ?= results/reference
reference-report:
	@mkdir -p reports/reference
	$(TESTBED) report $(REFERENCE) --out reports/reference

reference-checkpoint:
	$(TESTBED) checkpoint $(REFERENCE_RESULTS) --out $(REFERENCE)

# The report's screenshots in docs/img/ (the scorecard, a site page), taken again.
report-screenshots:
	$(PY) docs/report_screenshots.py

replication: reference-report
	$(PY) -m analysis.campaign.replication reports/reference/findings.md REPLICATION.md

faults:
	$(PY) -m pytest -q -s --durations=10 -m "faults and not long" $(JUNIT) tests/faults

# The second tier: tests that repeat a property a `make test` test proves, at a larger
# size (more kills, more raced replays, slower networks). Each names, in its
# `long(strengthens=...)` mark, the fast test it strengthens (tests/unit/test_collection.py
# checks that the named test exists and runs in `make test`). Not part of `make test`.
test-long:
	$(PY) -m pytest -q -s --durations=10 -m "long" $(JUNIT) tests

bench:
	@for b in bench/*; do [ -x "$$b" ] && echo "== $$b" && "$$b"; done

clean:
	rm -rf results reports

# The container image (not part of `make test`; see docs/install-and-docker.md).
image:
	bash docker/image.sh build

image-test:
	bash docker/image.sh test
