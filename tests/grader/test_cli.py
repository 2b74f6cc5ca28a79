"""The command lines' help texts: ``python -m autograder --help`` and each command's, and every
script's (autograder/, bench/) say whole sentences, never a docstring's first line cut off."""

from __future__ import annotations

import ast
import re

import pytest

from autograder.__main__ import main
from helpers import ROOT

COMMANDS = ("release", "public", "grade", "merge", "gradescope", "demo", "collect", "formgrade",
            "bench", "feedback", "audit", "settings", "similarity")  # fmt: skip


def help_text(capsys, *argv: str, raw: bool = False) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    return out if raw else " ".join(out.split())  # argparse's line breaks undone


def test_the_autograders_help_says_its_first_paragraph_whole(capsys):
    text = help_text(capsys)
    first = (
        "The autograder's command line (the Makefile's release, grade, merge, gradescope, "
        "collect, formgrade, bench, similarity). "
    )
    assert first in text


@pytest.mark.parametrize("command", COMMANDS)
def test_each_commands_help_opens_with_what_it_does(capsys, command):
    listing = help_text(capsys, raw=True)  # "    grade   grade the ...\n            none)"
    listed = re.search(rf"^    {command} +(.+(?:\n {{10,}}\S.*)*)", listing, re.M)
    assert listed, command
    line = " ".join(listed[1].split())
    own = help_text(capsys, command)
    usage = rf"usage: python -m autograder {command} .*?"
    assert re.fullmatch(rf"{usage} {re.escape(line)} (positional arguments|options): .*", own)


def _descriptions(path) -> list[str]:
    """The ``description`` of every ArgumentParser that ``path`` builds from its docstring, as
    its code computes it."""
    tree = ast.parse(path.read_text())
    doc = ast.get_docstring(tree, clean=False)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "ArgumentParser":
            for kw in node.keywords:
                if kw.arg == "description" and "__doc__" in ast.unparse(kw.value):
                    code = compile(ast.Expression(kw.value), str(path), "eval")
                    found.append(" ".join(eval(code, {"__doc__": doc}).split()))
    return found


def test_every_scripts_description_is_whole_sentences():
    scripts = sorted([*(ROOT / "autograder").rglob("*.py"), *(ROOT / "bench").glob("*.py")])
    seen = 0
    for path in scripts:
        for text in _descriptions(path):
            seen += 1
            assert re.search(r"[.!?]\)?$", text), f"{path.name}: {text!r}"
    assert seen >= 8
