"""Benchmark of Part 6b (extra credit): what full and segment attention cost as inputs grow.

    python bench/part6_attention.py             # n = 256 to 4096 tokens (the notebook's full mode)
    python bench/part6_attention.py --quick     # n = 64 to 1024 (its quick mode)
    python bench/part6_attention.py --notebook  # also run the notebook (accuracies, wall time)

It measures the reference solution's own code: the cells of ``6b_segment_attention`` that
define ``masked_attention``, ``segment_keys_mask``, ``SegmentAttention`` and the runs the
notebook times (``cost_runs``: BERT's full self-attention and segment attention with
S = M = sqrt(n), batch 1, d = 32) are executed here, and :func:`course_lib.cost.measure` times
one forward pass of each (the best of five, after a warm-up) and the bytes autograd keeps for
the backward pass. The table gives both per length, and the exponents of power laws fitted on
a log-log scale over the three longest inputs (the shortest ones mostly measure Python's
overhead): for the memory, 1.97 for full attention and 1.20 for segment attention, the same to
the digit in every run (it is counted); for the time, about 2 and well below it, but a
three-point fit of times on a shared machine moves by about 1 from run to run (2.71 and 1.85,
then 3.22 and 2.23, then 2.37 and 2.38 within half an hour). On the CPU torch uses one thread,
as ``env.setup`` does in every notebook on a CPU.

:func:`cost_table` returns the measurements for another script to use.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import nbformat
import torch
from torch import nn

from course_lib import cost

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebooks import run_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "solutions" / "a3" / "6b_segment_attention.ipynb"
CELLS = ("masked_attention", "segment_keys_mask", "segment_attention", "cost_runs")
SIDES = {True: [8, 12, 16, 24, 32], False: [16, 24, 32, 48, 64]}  # S = M, by quick mode
FIT_LAST = 3  # lengths the exponents are fitted over (the longest)


def solution_code(path: Path = NOTEBOOK) -> dict[str, Any]:
    """The namespace of the solution's cells :data:`CELLS` (run with the setup's imports)."""
    nb = nbformat.read(path, as_version=4)
    sources = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in nb.cells}
    missing = [name for name in CELLS if name not in sources]
    if missing:
        raise RuntimeError(f"{path.name} has no cell {missing}")
    namespace: dict[str, Any] = {"math": math, "torch": torch, "nn": nn}
    for name in CELLS:
        exec(compile(sources[name], f"{path.name}:{name}", "exec"), namespace)  # noqa: S102
    return namespace


def cost_table(quick: bool) -> dict[str, Any]:
    """Time and memory of full and segment attention at each length, and the fitted exponents:
    ``{"lengths", "seconds": {method: [...]}, "bytes": {method: [...]},
    "exponents": {"seconds": {method: k}, "bytes": {method: k}}, "device"}``."""
    code = solution_code()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    try:
        table = cost.measure(code["COST_RUNS"], [side * side for side in SIDES[quick]])
    finally:
        torch.set_num_threads(threads)
    table["exponents"] = {
        key: cost.exponents(table, key, last=FIT_LAST) for key in ("seconds", "bytes")
    }
    table["device"] = "CPU (one torch thread)"
    return table


def table_text(table: dict[str, Any]) -> str:
    """The cost table and the exponents as Markdown."""
    full, segment = "full attention", "segment attention"
    seconds, memory = table["seconds"], table["bytes"]
    lines = [
        f"Part 6b: one forward pass, batch 1, d = 32, on {table['device']}",
        "",
        "| n | full ms | segment ms | speed-up | full MB | segment MB | memory ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, n in enumerate(table["lengths"]):
        lines.append(
            f"| {n} | {1e3 * seconds[full][i]:.2f} | {1e3 * seconds[segment][i]:.2f} | "
            f"{seconds[full][i] / seconds[segment][i]:.1f}x | {memory[full][i] / 1e6:.2f} | "
            f"{memory[segment][i] / 1e6:.2f} | {memory[full][i] / memory[segment][i]:.1f}x |"
        )
    lines += ["", f"fitted exponents (the {FIT_LAST} longest inputs):", ""]
    lines += ["| | time | memory | expected |", "|---|---|---|---|"]
    for name, expected in [(full, "about 2"), (segment, "well below 2 (1.5 for the scores)")]:
        k_time, k_memory = (table["exponents"][key][name] for key in ("seconds", "bytes"))
        lines.append(f"| {name} | {k_time:.2f} | {k_memory:.2f} | {expected} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the quick mode's shorter inputs")
    parser.add_argument(
        "--notebook", action="store_true", help="also run the notebook: accuracies, wall time"
    )
    args = parser.parse_args()
    print(table_text(cost_table(args.quick)))
    if args.notebook:
        saved = run_notebook(NOTEBOOK, quick=args.quick)["part6b_segment_attention"]
        print("\nthe notebook, top to bottom:", f"{saved['wall_seconds']:.0f} s;", "test accuracy:")
        for name, accuracy in saved["accuracy"].items():
            print(f"  {name}: {accuracy:.1%}")


if __name__ == "__main__":
    main()
