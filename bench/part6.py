"""Benchmark of Part 6 (extra credit) in one run: 6a's transfer table, then 6b's cost-versus-length
table with its fitted exponents.

    python bench/part6.py          # full mode (the tables of the README's Part 6 section)
    python bench/part6.py --quick  # quick mode (seconds: the grader's shortened runs)

Each half is its own script, importable on its own (``part6_transfer.transfer_table``,
``part6_attention.cost_table``); this one runs both and prints both tables, with the seconds
each took.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from part6_attention import cost_table, table_text  # noqa: E402
from part6_transfer import table, transfer_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="quick mode instead of full mode")
    args = parser.parse_args()
    start = time.perf_counter()
    print(table(transfer_table(args.quick), args.quick), flush=True)
    middle = time.perf_counter()
    print(f"\n(6a: {middle - start:.0f} s)\n", flush=True)
    print(table_text(cost_table(args.quick)))
    print(f"\n(6b: {time.perf_counter() - middle:.0f} s)")


if __name__ == "__main__":
    main()
