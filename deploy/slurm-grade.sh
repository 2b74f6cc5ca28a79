#!/bin/bash
# Grade the class on a Slurm cluster: an array job of N shards (`make grade SHARD=i/N`), then
# one job, dependent on all of them, that merges them (`make merge`). README "Grading at scale".
#
# The repository is on a file system every node shares (home or project space), with
# `make setup` done once (on a login node) and the submissions in autograder/class/submitted/
# (`make collect ZIP=...`). From the repository root, on a login node:
#
#   deploy/slurm-grade.sh 16          submit 16 shards and the merge after them
#   deploy/slurm-grade.sh 16 --cpus-per-task=8 --mem-per-cpu=4G --time=02:00:00 --partition=short
#                                     the same, the shards' resources set here: sbatch options
#                                     after the number beat the #SBATCH lines below
#   sbatch deploy/slurm-grade.sh      the shards only (the --array below), merge by hand later
#
# Each task grades its shard in autograder/out/shards/<i>-of-<N>/ with one worker per CPU it
# was given; the merge writes autograder/out/grades.csv and the report. The merge's own
# resources: A3_MERGE_OPTIONS (default below). A shard that failed is run again alone, with
# the merge after it: `deploy/slurm-grade.sh 16 --array=<i>` (the shard count stays 16).
# Instead of `make setup` on the cluster, the image of deploy/Containerfile works too
# (Apptainer: `apptainer exec --bind "$PWD" a3-grader.sif make grade ...`).
#
#SBATCH --job-name=a3-grade
#SBATCH --array=0-15
#SBATCH --cpus-per-task=4
#SBATCH --mem-per-cpu=3G
#SBATCH --time=04:00:00
#SBATCH --output=autograder/out/shards/slurm-%A_%a.log
set -euo pipefail

if [ -z "${SLURM_JOB_ID:-}" ]; then  # on the login node: submit the shards, then the merge
  shards="${1:-16}"
  if ! [[ "$shards" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [SHARDS [SBATCH_OPTION...]]   (a positive number of shards, default 16)" >&2
    exit 2
  fi
  shift $(($# > 0 ? 1 : 0))
  read -r -a merge_options <<<"${A3_MERGE_OPTIONS:---time=01:00:00 --cpus-per-task=1 --mem=8G}"
  mkdir -p autograder/out/shards
  array=$(sbatch --parsable --array="0-$((shards - 1))" --export=ALL,A3_SHARDS="$shards" \
    "$@" "$0")
  array="${array%%;*}"
  sbatch --parsable --job-name=a3-merge --dependency="afterany:$array" "${merge_options[@]}" \
    --output=autograder/out/shards/slurm-merge-%j.log --wrap="make merge SHARDS=$shards"
  echo "submitted $shards shard(s) as job $array, and the merge after them"
  exit 0
fi

# One array task: its shard of the class. N is A3_SHARDS (set above) or the number of tasks of
# the array (`sbatch deploy/slurm-grade.sh`: 0 to N-1).
shards="${A3_SHARDS:-$((SLURM_ARRAY_TASK_MAX + 1))}"
cd "${SLURM_SUBMIT_DIR:-.}"
make grade SHARD="$SLURM_ARRAY_TASK_ID/$shards" JOBS="${SLURM_CPUS_PER_TASK:-1}"
