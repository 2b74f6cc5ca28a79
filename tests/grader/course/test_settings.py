"""The settings of ``course.toml`` (``autograder/course/settings.py``, the tables of
``autograder/course/config.py``): one declaration per setting gives its default, its check and its
line in ``python -m autograder settings``."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import pytest

from autograder.course import config, nbgrader_dir, settings
from helpers import ENV, ROOT, make_course


def _set(root, table: str, line: str) -> None:
    """Put ``line`` (``key = value``) in the ``[table]`` of ``root``'s course.toml, in place of
    the course's own line for that key."""
    toml = root / "course.toml"
    text = re.sub(rf"^{line.split(' = ')[0]} = .*\n", "", toml.read_text(), flags=re.M)
    if f"[{table}]" not in text:
        text += f"\n[{table}]\n"
    toml.write_text(text.replace(f"[{table}]", f"[{table}]\n{line}", 1))


def test_every_setting_is_declared_with_its_meaning():
    for name, cls in config.TABLES.items():
        for field in dataclasses.fields(cls):
            assert field.metadata.get("help"), f"[{name}] {field.name} says nothing of itself"
    text = settings.describe(config.TABLES)
    for name, cls in config.TABLES.items():
        assert f"[{name}]" in text
        for field in dataclasses.fields(cls):
            assert re.search(rf"^{field.name} = .*# .+: {re.escape(field.metadata['help'])}",
                             text, re.M), field.name  # fmt: skip
    assert "cell_timeout = 300  # int >= 1: " in text
    assert "threshold = 0.4  # number from 0 to 1: " in text


def test_settings_command_shows_the_course_s_values(tmp_path):
    root = make_course(tmp_path)
    _set(root, "audit", "show = 7")
    cmd = [sys.executable, "-m", "autograder", "--root", str(root), "settings"]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert re.search(r"^show = 7  # int >= 0: .* \(default 3\)$", out.stdout, re.M)
    assert "[similarity]" in out.stdout and 'canvas_column = ""' in out.stdout


@pytest.mark.parametrize(
    "table, line, error",
    [
        ("grade", "cell_timeout = 0", "[grade] cell_timeout must be a positive integer, got 0"),
        ("grade", 'cell_timeout = "300"', "[grade] cell_timeout must be a positive integer"),
        ("grade", "jobs = -1", "[grade] jobs must be an integer >= 0, got -1"),
        ("grade", "jobs = 1.5", "[grade] jobs must be an integer >= 0, got 1.5"),
        ("grade", "tamper_scan = 1", "[grade] tamper_scan must be true or false, got 1"),
        ("grade", 'extra_credit = "5a"', "[grade] extra_credit must be a list of strings"),
        ("grade", "colour = 1", "unknown [grade] settings ['colour']"),
        (
            "grade",
            "extra_credit_cap = -1",
            "[grade] extra_credit_cap must be a number >= 0, got -1",
        ),
        ("grade", 'extra_credit_cap = "2"', "[grade] extra_credit_cap must be a number >= 0"),
        ("audit", "min_killed = 1.5", "[audit] min_killed must be a number from 0 to 1"),
        ("audit", "min_killed = true", "[audit] min_killed must be a number from 0 to 1"),
        ("sandbox", "hide = [1]", "[sandbox] hide must be a list of strings, got [1]"),
        ("lms", "canvas_column = 3", "[lms] canvas_column must be a string, got 3"),
        ("feedback", 'show_test_source = "yes"', "[feedback] show_test_source must be true or"),
    ],
)
def test_a_wrong_setting_is_refused_by_name(tmp_path, table, line, error):
    root = make_course(tmp_path)
    _set(root, table, line)
    with pytest.raises(config.ConfigError, match=re.escape(error)):
        config.load(root)


def test_a_number_setting_takes_an_integer_and_defaults_fill_the_rest(tmp_path):
    root = make_course(tmp_path)
    _set(root, "similarity", "threshold = 1")
    course = config.load(root)
    assert course.similarity.threshold == 1.0 and isinstance(course.similarity.threshold, float)
    assert course.audit == config.load(root).audit
    assert config.Limits().memory_mb == 6144 and config.GradeSettings().jobs == 0
    assert config.GradeSettings().extra_credit_cap == 2.0  # extra credit adds 2 points at most
    _set(root, "grade", "extra_credit_cap = 0")  # 0: extra credit adds nothing
    assert config.load(root).grade.extra_credit_cap == 0.0


def test_nbgrader_takes_the_cell_limit_from_the_checked_settings(tmp_path):
    """nbgrader's own commands (the formgrader, ``nbgrader`` by hand) read the course's cell
    time limit through the grader's settings model: the same value, the same refusal."""
    root = make_course(tmp_path)
    _set(root, "grade", "cell_timeout = 77")
    assert nbgrader_dir.load_config(root / "autograder").Execute.timeout == 77
    _set(root, "grade", "cell_timeout = 0")
    error = "[grade] cell_timeout must be a positive integer, got 0"
    with pytest.raises(config.ConfigError, match=re.escape(error)):
        nbgrader_dir.load_config(root / "autograder")


def test_nbgrader_by_hand_in_the_course_folder_finds_the_settings():
    """``nbgrader`` run by hand in ``autograder/`` (nothing on PYTHONPATH) reads the same
    settings."""
    code = (
        "from traitlets.config.loader import PyFileConfigLoader as Loader\n"
        "print(Loader('nbgrader_config.py', path='.').load_config().Execute.timeout)"
    )
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "autograder", env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(config.load(ROOT).grade.cell_timeout)
