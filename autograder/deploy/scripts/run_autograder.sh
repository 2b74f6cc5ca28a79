#!/usr/bin/env bash
# Gradescope runs this for every submission, in /autograder, the student's files in
# /autograder/submission: grade them as `make grade` does and write
# /autograder/results/results.json (autograder/deploy/gradescope.py). For a local test,
# A3_AUTOGRADER_ROOT replaces /autograder and A3_PYTHON the Python setup.sh installed.
# Written by `make gradescope`.
set -uo pipefail
ROOT="${A3_AUTOGRADER_ROOT:-/autograder}"
PYTHON="${A3_PYTHON:-@VENV@/bin/python}"
cd "$ROOT/source" || exit 1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg
PATH="$(dirname "$PYTHON"):$PATH"
export PATH
exec "$PYTHON" -m autograder.deploy.gradescope run --root "$ROOT"
