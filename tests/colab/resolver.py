"""Ask pip's resolver what a student's install would do on Colab, without Colab.

A snapshot (``colab-packages-YYYY-MM-DD.txt`` beside this file) lists the distributions a
Colab runtime has preinstalled. :func:`fake_runtime` makes a throwaway venv, with the
snapshot's Python when this machine has it, whose site-packages holds one minimal
``.dist-info`` per snapshot line (``METADATA``, ``INSTALLER``, ``RECORD``; no code): pip sees
them as installed, so it never fetches them, torch included. :func:`dry_run` runs
``pip install --dry-run --report`` against that venv and returns what pip would install;
:func:`changes` says which of those would replace a snapshot package.

pip reads dependency metadata from the index (PEP 658) when the index offers it, else, with
``fast-deps``, from the wheel's tail by HTTP range requests; pip >= 25.3 (the dev extra) then
downloads no wheel at all in a dry run (older pips fetch every wheel they would install). The
machine's pip configuration files are ignored (they may add local indexes that Colab does not
see); the network settings of ``PIP_*`` environment variables are kept. ``COLAB_INDEX_URL``
overrides the index (default PyPI), ``COLAB_PYTHON`` the interpreter.

Used by tests/course/test_colab_install.py and bench/install_size.py.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import warnings
from dataclasses import dataclass, field, replace
from functools import cache
from importlib.metadata import version as installed_version
from pathlib import Path
from urllib.parse import unquote, urlparse

from packaging.utils import canonicalize_name
from packaging.version import Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INDEX_URL = os.environ.get("COLAB_INDEX_URL", "https://pypi.org/simple")
# The first pip whose `install --dry-run` downloads no wheel when it has their metadata.
METADATA_ONLY_PIP = Version("25.3")
# PIP_* variables kept for pip: how to reach the network, not what to install.
_NETWORK_VARS = {
    "PIP_CERT",
    "PIP_CLIENT_CERT",
    "PIP_PROXY",
    "PIP_TRUSTED_HOST",
    "PIP_TIMEOUT",
    "PIP_DEFAULT_TIMEOUT",
    "PIP_RETRIES",
    "PIP_CACHE_DIR",
}


# --- the snapshot -------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """Colab's preinstalled distributions: ``packages`` maps normalised name to version."""

    python: str  # e.g. "3.13.15"
    packages: dict[str, str] = field(repr=False)

    def without(self, *names: str) -> Snapshot:
        """The snapshot less ``names`` (a runtime that lacks them)."""
        gone = {canonicalize_name(n) for n in names}
        return replace(self, packages={n: v for n, v in self.packages.items() if n not in gone})

    def with_version(self, name: str, version: str) -> Snapshot:
        """The snapshot with ``name`` at ``version`` instead."""
        return replace(self, packages={**self.packages, canonicalize_name(name): version})


def latest_snapshot_path() -> Path:
    """The newest ``colab-packages-YYYY-MM-DD.txt`` beside this module."""
    paths = sorted(HERE.glob("colab-packages-*.txt"))
    if not paths:
        raise FileNotFoundError(f"no colab-packages-*.txt in {HERE}")
    return paths[-1]


def read_snapshot(path: Path | None = None) -> Snapshot:
    """Parse a snapshot: ``name==version`` lines and a ``# python: X.Y.Z`` header line."""
    path = path or latest_snapshot_path()
    python, packages = None, {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("# python:"):
            python = line.split(":", 1)[1].strip()
        elif line and not line.startswith("#"):
            name, version = line.split("==")
            packages[canonicalize_name(name)] = version.strip()
    if python is None:
        raise ValueError(f"{path}: no '# python: X.Y.Z' line")
    return Snapshot(python, packages)


def bundled_model_requirement() -> str:
    """``course_lib.bert.BUNDLED_MODEL_REQUIREMENT``, read without importing torch."""
    tree = ast.parse((ROOT / "course_lib" / "bert.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "BUNDLED_MODEL_REQUIREMENT" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise LookupError("course_lib/bert.py defines no BUNDLED_MODEL_REQUIREMENT")


# --- a fake runtime -----------------------------------------------------------------------


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` ("3.13" or "3.13.15": major.minor counts), or None."""
    wanted = ".".join(version.split(".")[:2])
    candidates = [os.environ.get("COLAB_PYTHON"), shutil.which(f"python{wanted}")]
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{pyenv}/versions/{wanted}.*/bin/python{wanted}"))
    for exe in filter(None, candidates):
        probe = [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
        try:
            found = subprocess.run(probe, capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        if found.strip() == wanted:
            return exe
    return None


def fake_runtime(snapshot: Snapshot, root: Path) -> Path:
    """A venv at ``root`` in which every snapshot package looks installed; its python."""
    python = find_python(snapshot.python)
    if python is None:
        python = sys.executable
        warnings.warn(
            f"no Python {snapshot.python} here: resolving for {sys.version.split()[0]}, so "
            "Requires-Python and markers are checked against the wrong version",
            stacklevel=2,
        )
    subprocess.run([python, "-m", "venv", "--without-pip", str(root)], check=True)
    venv_python = root / "bin" / "python"
    purelib = subprocess.run(
        [venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    for name, version in snapshot.packages.items():
        _write_dist_info(Path(purelib), name, version)
    return venv_python


def _write_dist_info(site_packages: Path, name: str, version: str) -> None:
    """A ``.dist-info`` folder that makes ``name==version`` look installed (no code)."""
    dist_info = site_packages / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    (dist_info / "INSTALLER").write_text("pip\n")
    record = [f"{dist_info.name}/{f},," for f in ("METADATA", "INSTALLER", "RECORD")]
    (dist_info / "RECORD").write_text("\n".join(record) + "\n")


# --- pip's answer -------------------------------------------------------------------------


@dataclass(frozen=True)
class Install:
    """One distribution that pip would install (an entry of the report's ``install``)."""

    name: str  # normalised
    version: str
    url: str

    @property
    def filename(self) -> str:
        return unquote(urlparse(self.url).path.rsplit("/", 1)[-1])


class PipFailed(RuntimeError):
    """pip could not resolve the install (its stderr is the message)."""


def pip_version() -> Version:
    """The version of the pip that :func:`pip` runs (this interpreter's)."""
    return Version(installed_version("pip"))


def index_reachable(timeout: float = 5.0) -> bool:
    """Whether a TCP connection to the index's host opens within ``timeout`` seconds."""
    url = urlparse(INDEX_URL)
    if url.scheme == "file":
        return True
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
    except OSError:
        return False
    return True


@cache
def _metadata_only_options() -> tuple[str, ...]:
    """``--use-feature=fast-deps`` where this pip has it: wheel metadata by range requests
    when the index does not serve PEP 658 metadata (pip prefers PEP 658 when it does)."""
    try:
        from pip._internal.cli.cmdoptions import use_new_feature

        choices = use_new_feature().choices
    except Exception:  # pip's internals moved: let pip download what it needs
        return ()
    return ("--use-feature=fast-deps",) if "fast-deps" in choices else ()


def _pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in _NETWORK_VARS}
    env["PIP_CONFIG_FILE"] = os.devnull  # no config file: no local indexes or find-links
    return env


def pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    """Run this interpreter's pip on the environment of ``python`` (``pip --python``)."""
    command = [sys.executable, "-m", "pip", "--python", str(python), *args]
    return subprocess.run(command, capture_output=True, text=True, env=_pip_env())


def dry_run(python: Path, *requirements: str, log: Path | None = None) -> list[Install]:
    """What ``pip install requirements`` (options allowed) would install into ``python``'s
    environment, from pip's ``--dry-run --report``. Raises :class:`PipFailed` when pip fails."""
    report = python.parent.parent / "report.json"
    report.unlink(missing_ok=True)
    options = ["--dry-run", "--quiet", "--no-input", "--disable-pip-version-check"]
    options += ["--index-url", INDEX_URL, "--report", str(report), *_metadata_only_options()]
    if log is not None:
        options += ["--log", str(log)]
    done = pip(python, "install", *options, *requirements)
    if done.returncode != 0:
        raise PipFailed(f"pip install {' '.join(requirements)} failed:\n{done.stderr}")
    return [
        Install(
            name=canonicalize_name(item["metadata"]["name"]),
            version=item["metadata"]["version"],
            url=item["download_info"]["url"],
        )
        for item in json.loads(report.read_text())["install"]
    ]


def full_downloads(log: str) -> list[str]:
    """The files that pip's ``--log`` says it downloaded whole (not metadata, not ranges)."""
    return re.findall(r"Downloading (\S+\.(?:whl|tar\.gz|zip)) \(", log)


def changes(installs: list[Install], snapshot: Snapshot) -> list[str]:
    """The snapshot packages that ``installs`` would replace, e.g. ``"numpy 1.21.0 -> 2.5.5"``
    (an install, upgrade, downgrade or reinstall of a preinstalled distribution)."""
    return [
        f"{i.name} {snapshot.packages[i.name]} -> {i.version}"
        for i in installs
        if i.name in snapshot.packages
    ]
