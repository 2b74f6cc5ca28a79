"""Results each notebook records at its end, so Part 3 can compare the three models and
``make bench`` can print one table. Stored as JSON files in ``results/`` (the working folder).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS_DIR = Path("results")
COLUMNS = ("model", "hidden_size", "epochs", "seconds_per_epoch", "best_val_loss",
           "exact_match", "char_error_rate", "test_sentence", "quick")  # fmt: skip


def save_results(name: str, folder: str | Path = RESULTS_DIR, **values: Any) -> Path:
    """Write ``values`` (numbers and strings) to ``folder/name.json`` and return the path."""
    path = Path(folder) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values, indent=2, sort_keys=True))
    return path


def load_results(folder: str | Path = RESULTS_DIR) -> dict[str, dict[str, Any]]:
    """Every saved result, by name; a damaged file is reported and skipped."""
    results = {}
    for path in sorted(Path(folder).glob("*.json")):
        try:
            results[path.stem] = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            print(f"skipping {path}: {err}")
    return results


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
