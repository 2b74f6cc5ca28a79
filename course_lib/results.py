"""Results each notebook records at its end, so Part 3 can compare the models of Parts 1-3 and
``make bench`` can print one table.

On Colab every notebook runs in a runtime of its own: the files one notebook writes are gone
when the next one opens. So :func:`save_results` does two things: it writes
``results/<name>.json`` in the working folder (local Jupyter, ``make bench``) and it prints the
numbers as one line, ``A3-RESULT <name> {...}``, that the student copies into Part 3's
comparison cell. :func:`collect` reads such pasted lines and any saved files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS_DIR = Path("results")
LINE_PREFIX = "A3-RESULT"
COLUMNS = ("model", "hidden_size", "epochs", "seconds_per_epoch", "best_val_loss",
           "exact_match", "char_error_rate", "test_sentence", "quick")  # fmt: skip
PARTS = {  # the results Part 3 compares, and the notebook that saves each
    "part1_gru": "1_gru",
    "part2_additive_attention": "2_additive_attention",
    "part3_transformer": "3_transformer",
}


def result_line(name: str, values: dict[str, Any]) -> str:
    """``values`` as the one line :func:`collect` reads back."""
    return f"{LINE_PREFIX} {name} {json.dumps(values, sort_keys=True, separators=(',', ':'))}"


def save_results(
    name: str, folder: str | Path = RESULTS_DIR, verbose: bool = True, **values: Any
) -> None:
    """Write ``values`` (numbers and strings) to ``folder/name.json`` and print them as the line
    to paste into Part 3 (``verbose``). Returns nothing, so a notebook cell that ends with it
    shows the line and nothing after it (:func:`results_path` names the file)."""
    path = results_path(name, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values, indent=2, sort_keys=True))
    if verbose:
        print(
            f"Saved {path}. On Colab, copy the next line into the comparison cell of Part 3 "
            "(each notebook has its own files there):\n" + result_line(name, values)
        )


def results_path(name: str, folder: str | Path = RESULTS_DIR) -> Path:
    """Where :func:`save_results` writes the results ``name``."""
    return Path(folder) / f"{name}.json"


def load_results(folder: str | Path = RESULTS_DIR) -> dict[str, dict[str, Any]]:
    """Every saved result, by name; a damaged file is reported and skipped."""
    results = {}
    for path in sorted(Path(folder).glob("*.json")):
        try:
            results[path.stem] = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            print(f"skipping {path}: {err}")
    return results


def parse_lines(text: str) -> dict[str, dict[str, Any]]:
    """The results in the ``A3-RESULT`` lines of ``text`` (pasted by hand: other lines and
    surrounding spaces are ignored; a damaged line is reported and skipped)."""
    results = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith(LINE_PREFIX):
            continue
        try:
            _, name, payload = line.split(maxsplit=2)
            values = json.loads(payload)
            if not isinstance(values, dict):
                raise ValueError("not a JSON object")
        except ValueError as err:
            print(f"skipping a damaged line ({err}): {line[:60]}...")
            continue
        results[name] = values
    return results


def collect(pasted: str = "", folder: str | Path = RESULTS_DIR) -> dict[str, dict[str, Any]]:
    """The results saved in ``folder`` (a notebook run in the same folder), then those in the
    pasted lines ``pasted`` (which win: they are what the student chose to compare)."""
    return {**load_results(folder), **parse_lines(pasted)}


def results_table(results: dict[str, dict[str, Any]], columns=COLUMNS) -> str:
    """A Markdown table of ``results``, one row per name, one column per key in ``columns``."""
    if not results:
        return "No results yet: run the notebooks of the earlier parts first."

    def cell(v):
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| name | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, row in results.items():
        lines.append(f"| {name} | " + " | ".join(cell(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)
