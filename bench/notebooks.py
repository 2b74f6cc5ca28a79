"""Benchmark: run solution notebooks top to bottom in full mode and print their results.

    python bench/notebooks.py solutions/a3/1_gru.ipynb [...]  [--quick]

Each notebook runs in a fresh temporary folder (so ``results/`` and ``checkpoints/`` start
empty) with ``COURSE_QUICK=0`` (``1`` with ``--quick``); the table shows the wall time of the
whole notebook and what the notebook saved with :func:`course_lib.results.save_results`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from course_lib.results import load_results, results_table

COLUMNS = ("model", "hidden_size", "epochs", "seconds_per_epoch", "best_val_loss",
           "exact_match", "char_error_rate", "test_sentence", "wall_seconds")  # fmt: skip


def run_notebook(path: Path, quick: bool) -> dict[str, dict]:
    """Execute ``path`` in a scratch folder; return the results it saved (plus wall time)."""
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copy(path, copy)
        nb = nbformat.read(copy, as_version=4)
        os.environ["COURSE_QUICK"] = "1" if quick else "0"
        start = time.perf_counter()
        NotebookClient(
            nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": tmp}}
        ).execute()
        wall = time.perf_counter() - start
        results = load_results(Path(tmp) / "results")
    for row in results.values():
        row["wall_seconds"] = round(wall, 1)
    print(f"{path}: {wall:.1f} s", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--quick", action="store_true", help="run in quick mode instead")
    args = parser.parse_args()
    results: dict[str, dict] = {}
    for path in args.notebooks:
        results.update(run_notebook(path, args.quick))
    print(results_table(results, columns=COLUMNS))


if __name__ == "__main__":
    main()
