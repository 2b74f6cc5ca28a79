"""Benchmark of Part 5 (extra credit): run its two solution notebooks and print the measurements
the part promises, as one table.

    python bench/part5.py            # full mode (the measurements), then quick mode (the timings)
    python bench/part5.py --no-quick # full mode only

Each notebook runs top to bottom in a fresh temporary folder (``bench/notebooks.py``'s
``run_notebook``) and saves its numbers with :func:`course_lib.results.save_results`:

- beam search (B = 5, alpha = 0) against greedy decoding: exact match of Part 1's model (no
  attention) on the validation words (``5a_decoding``);
- batched beam search against one hypothesis at a time: words per second (B = 5; the same
  ``beam_search``, once on all the validation words, one batch per length, and once word by
  word with the decoder run one hypothesis per call, ``RowByRowDecoder``) (``5a_decoding``);
- the pointer-generator against additive attention, both trained on 10 % of the training words:
  exact match on the validation words (``5b_copying_subwords``);
- the wall time of each notebook in full mode and in quick mode (the grader's mode).

The figures are for the machine it runs on (CPU, or the GPU when there is one: the table says
which); the notebooks limit torch to one CPU thread, as ``env.setup`` does everywhere.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebooks import run_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = {
    "part5a_decoding": ROOT / "solutions" / "a3" / "5a_decoding.ipynb",
    "part5b_copying_subwords": ROOT / "solutions" / "a3" / "5b_copying_subwords.ipynb",
}
COPY_10 = "copying, 10% of the words"
PLAIN_10 = "no copying, 10% of the words"
PLAIN_ALL = "no copying, all the words"


def device() -> str:
    if torch.cuda.is_available():
        return f"GPU ({torch.cuda.get_device_name(0)})"
    return "CPU (one torch thread)"


def table(full: dict[str, dict], quick: dict[str, dict] | None) -> str:
    """The measurements as a Markdown table."""
    a, b = full["part5a_decoding"], full["part5b_copying_subwords"]
    greedy, beam = a["greedy_exact_match"], a["beam_exact_match"]
    speed = a["words_per_second"]
    copy, plain, plain_all = (
        b["copying"][k]["exact_match"] for k in (COPY_10, PLAIN_10, PLAIN_ALL)
    )
    rows = [
        (
            "beam search B=5 vs greedy: exact match, Part 1 model, validation words",
            f"{beam:.1%} vs {greedy:.1%} ({100 * (beam - greedy):+.1f} points; "
            f"{a['beam_exact_match_alpha_1']:.1%} with alpha = 1)",
            "a gain",
        ),
        (
            "batched beam search vs one hypothesis at a time (B=5): words per second",
            f"{speed['batched']:,.0f} vs {speed['one hypothesis at a time']:,.0f} "
            f"({a['batching_speedup']:.0f}x; word by word {speed['word by word']:,.0f})",
            "at least 10x",
        ),
        (
            "pointer-generator vs additive attention, 10% of the training words: exact match",
            f"{copy:.1%} vs {plain:.1%} (additive on all the words: {plain_all:.1%})",
            "the copy model ahead",
        ),
    ]
    for name, row in full.items():
        rows.append((f"{name}: wall time, full mode", f"{row['wall_seconds']:.0f} s", ""))
    for name, row in (quick or {}).items():
        rows.append((f"{name}: wall time, quick mode", f"{row['wall_seconds']:.1f} s", "< 20 s"))
    lines = [f"Part 5 measurements on {device()}", "", "| measurement | result | expected |"]
    lines.append("|---|---|---|")
    lines += [f"| {m} | {r} | {e} |" for m, r, e in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-quick", action="store_true", help="skip the quick-mode timings")
    args = parser.parse_args()
    full: dict[str, dict] = {}
    for path in NOTEBOOKS.values():
        full.update(run_notebook(path, quick=False))
    quick: dict[str, dict] = {}
    if not args.no_quick:
        for path in NOTEBOOKS.values():
            quick.update(run_notebook(path, quick=True))
    missing = [name for name in NOTEBOOKS if name not in full]
    if missing:
        sys.exit(f"no results saved by {missing}: did the notebook fail?")
    print(table(full, quick))


if __name__ == "__main__":
    main()
