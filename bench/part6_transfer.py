"""Benchmark of Part 6a (extra credit, CoVe): run its solution notebook and print the transfer
table, the same classifier on four kinds of word vectors, with the mean and the spread over
seeds.

    python bench/part6_transfer.py          # full mode (the table the notebook promises)
    python bench/part6_transfer.py --quick  # quick mode (the grader's: training barely starts)

The notebook (``solutions/a3/6a_cove.ipynb``) runs top to bottom in a fresh temporary folder
(``bench/notebooks.py``'s ``run_notebook``) and saves its rows with
:func:`course_lib.results.save_results`; :func:`transfer_table` returns them, so another script
can import it::

    from part6_transfer import transfer_table
    rows = transfer_table(quick=False)  # [{"features": "static only", "accuracy_mean": ...}, ...]

The rows: static vectors only; static + CoVe (the frozen encoder of a translation model, words
to digits, one per seed); static + a randomly initialised encoder of the same shape (the
control this course adds); static + Part 4's frozen bundled BERT. Accuracy on Part 4's 160 test
expressions, and on the 76 of them whose order decides the sign; then pairs of rows compared
seed by seed (the mean difference and its standard error). Figures are for the machine it runs
on (the table says which).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebooks import run_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "solutions" / "a3" / "6a_cove.ipynb"
NAME = "part6a_cove"


def device() -> str:
    if torch.cuda.is_available():
        return f"GPU ({torch.cuda.get_device_name(0)})"
    return "CPU (one torch thread)"


def transfer_table(quick: bool) -> list[dict]:
    """Run the notebook (quick or full mode) and return its transfer table: one dict per row
    (``features``, ``accuracy_mean``, ``accuracy_std``, ``order_accuracy_mean``,
    ``order_accuracy_std``, ``accuracy_per_seed``), plus ``seeds``, ``translation_exact_match``
    (one per seed: each seed trains its own translation model), ``majority_accuracy``,
    ``differences`` (rows compared seed by seed: ``rows``, ``score``, ``per_seed``, ``mean``,
    ``stderr``) and ``wall_seconds`` (the whole notebook) in every row."""
    results = run_notebook(NOTEBOOK, quick=quick)
    if NAME not in results:
        raise RuntimeError(f"{NOTEBOOK.name} saved no results: did the notebook fail?")
    saved = results[NAME]
    shared = {
        key: saved[key]
        for key in (
            "seeds",
            "translation_exact_match",
            "majority_accuracy",
            "differences",
            "wall_seconds",
        )
    }
    return [{**row, **shared} for row in saved["rows"]]


def table(rows: list[dict], quick: bool) -> str:
    """The rows as a Markdown table, then the differences seed by seed, with what they were
    measured on."""
    first = rows[0]
    exact = ", ".join(f"{v:.1%}" for v in first["translation_exact_match"])
    lines = [
        f"Part 6a transfer table on {device()}, {'quick' if quick else 'full'} mode, seeds "
        f"{first['seeds']} (mean ± standard deviation); translation exact match per seed "
        f"{exact}; always 'positive' {first['majority_accuracy']:.3f}; notebook "
        f"{first['wall_seconds']:.0f} s",
        "",
        "| features | test accuracy | order accuracy | per seed |",
        "|---|---|---|---|",
    ]
    for row in rows:
        seeds = ", ".join(f"{v:.3f}" for v in row["accuracy_per_seed"])
        lines.append(
            f"| {row['features']} | {row['accuracy_mean']:.3f} ± {row['accuracy_std']:.3f} | "
            f"{row['order_accuracy_mean']:.3f} ± {row['order_accuracy_std']:.3f} | {seeds} |"
        )
    lines += [
        "",
        "| difference (seed by seed) | score | per seed | mean ± standard error |",
        "|---|---|---|---|",
    ]
    for found in first["differences"]:
        seeds = ", ".join(f"{v:+.3f}" for v in found["per_seed"])
        lines.append(
            f"| {found['rows'][0]} − {found['rows'][1]} | {found['score']} | {seeds} | "
            f"{found['mean']:+.3f} ± {found['stderr']:.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="quick mode instead of full mode")
    args = parser.parse_args()
    print(table(transfer_table(args.quick), args.quick))


if __name__ == "__main__":
    main()
