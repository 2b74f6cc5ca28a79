"""``bench/walk.py``, the measure of issue 40's walk, on small packages written here: what it
counts as a room, a stay and a return, and which calls it follows."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

from helpers import ROOT


def walk_module():
    spec = importlib.util.spec_from_file_location("bench_walk", ROOT / "bench" / "walk.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def package(root: Path, files: dict[str, str]) -> Path:
    """``root/autograder/...`` with ``files`` (path below autograder -> source)."""
    for name, source in files.items():
        path = root / "autograder" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    (root / "autograder" / "__init__.py").touch()
    return root


def test_a_call_back_into_a_room_is_a_return(tmp_path):
    """main -> a.one -> b.two, then main -> a.three: the walk comes back to ``a`` after
    ``b`` (its caller's room), to ``main`` after ``a``, and to ``a`` again for ``three``."""
    walk = walk_module()
    root = package(
        tmp_path,
        {
            "main.py": """
                from autograder import a
                def run():
                    a.one()
                    a.three()
            """,
            "a.py": """
                from autograder.b import two
                def one():
                    two()
                def three():
                    pass
            """,
            "b.py": "def two():\n    pass\n",
        },
    )
    code = walk.read(root)
    shape = walk.measure(code, walk.find(code, "main.run"))
    # main, a, b, a, main, a, main: 7 stays in 3 rooms
    assert (shape.functions, shape.rooms, shape.stays, shape.returns) == (4, 3, 7, 4)
    assert [(c[1], k[1]) for c, k in shape.extra] == [("run", "three")]
    by_stage = walk.measure(code, walk.find(code, "main.run"), by_stage=True)
    assert (by_stage.rooms, by_stage.returns) == (3, 4)  # flat modules are their own stages


def test_functions_handed_over_and_methods_are_followed_once(tmp_path):
    """A function handed to a call (a process's target) is walked, ``self.m()`` and
    ``Class()`` are, a function already entered is not entered again, and calls on other
    objects are not resolved."""
    walk = walk_module()
    root = package(
        tmp_path,
        {
            "main.py": """
                from autograder import child
                from autograder.box import Box
                def run(pool, other):
                    pool.start(target=child.main)
                    Box().fill()
                    child.main()
                    other.anything()
            """,
            "child.py": "def main():\n    helper()\n\ndef helper():\n    pass\n",
            "box.py": """
                class Box:
                    def __init__(self):
                        self.fill()
                    def fill(self):
                        pass
            """,
        },
    )
    code = walk.read(root)
    names = [key[1] for _, key in walk.walk(code, walk.find(code, "main.run"))]
    assert names == ["run", "main", "helper", "Box.__init__", "Box.fill"]


def test_floors_arrows_and_cycles(tmp_path):
    """Floors count imports down to a module that imports none; a cycle is one group, and a
    lazy import counts."""
    walk = walk_module()
    root = package(
        tmp_path,
        {
            "top.py": "from autograder import mid\n",
            "mid.py": "from autograder import low\n",
            "low.py": "def f():\n    from autograder import low2\n",
            "low2.py": "from autograder import low\n",
        },
    )
    level, cycles = walk.floors(walk.read(root))
    assert level["autograder.top"] == 2 and level["autograder.low"] == 0
    assert [sorted(c) for c in cycles] == [["autograder.low", "autograder.low2"]]


def test_the_grader_is_read_without_error():
    """The real grader: its entry is found and the walk enters the worker that grading
    starts (through the function the launcher hands to the fork server)."""
    walk = walk_module()
    code = walk.read(ROOT)
    entered = {key[0] for _, key in walk.walk(code, walk.find(code, "grading.grade"))}
    assert "autograder.marking.worker" in entered and "autograder.marking.launcher" in entered
