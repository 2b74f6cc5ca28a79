"""`make public`: the student-facing repository holds the library, the packaging and the
released notebooks, nothing instructor-only, and installs with pip."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import config, notebooks
from autograder.publish import leaks, public
from helpers import ROOT


def copy_course(tmp: Path) -> Path:
    """The parts of this repository that ``public.build`` reads, copied to ``tmp``."""
    tmp.mkdir(parents=True)
    for name in ("course.toml", "pyproject.toml"):
        shutil.copyfile(ROOT / name, tmp / name)
    for folder in ("solutions", "assignments"):
        shutil.copytree(ROOT / folder, tmp / folder)
    shutil.copytree(ROOT / "course_lib", tmp / "course_lib", ignore=shutil.ignore_patterns("__py*"))
    return tmp


@pytest.fixture()
def course(tmp_path):
    return config.load(copy_course(tmp_path / "repo"))


def tree_files(tree: Path) -> set[str]:
    return {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()}


def test_public_tree_holds_the_library_packaging_and_notebooks_only(course, tmp_path):
    out = public.build(course, tmp_path / "public", draft=True)
    files = tree_files(out)
    names = course.notebooks()
    assert {f"assignments/a3/{n}.ipynb" for n in names} <= files
    assert {"README.md", "pyproject.toml", ".gitignore", "course_lib/grading/wire.py"} <= files
    assert "course_lib/data/sense_and_sensibility.txt" in files
    assert {f.split("/")[0] for f in files} == set(public.TOP_LEVEL)
    assert not any("solutions" in f or "judges" in f or f.endswith(".json") for f in files)
    for n in names:  # the notebooks are the released ones, byte for byte
        assert (out / f"assignments/a3/{n}.ipynb").read_bytes() == (
            course.assignments_dir / f"{n}.ipynb"
        ).read_bytes()
    readme = (out / "README.md").read_text()
    assert all(course.colab_url(n) in readme for n in names)
    assert "extra credit: `5a_decoding.ipynb`" in readme
    assert public.check_tree(course, out) == []


def test_rebuilding_keeps_the_clone_history_and_drops_stale_files(course, tmp_path):
    out = public.build(course, tmp_path / "public", draft=True)
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "course_lib" / "old_module.py").write_text("x = 1\n")
    public.build(course, out, draft=True)
    assert (out / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert not (out / "course_lib" / "old_module.py").exists()


def test_a_placeholder_repository_is_refused_and_nothing_is_written(course, tmp_path):
    out = tmp_path / "public"
    with pytest.raises(public.PublicError, match="placeholder"):
        public.build(course, out)
    assert not out.exists()


def test_notebooks_stamped_for_another_repository_are_refused(course, tmp_path):
    toml = course.root / "course.toml"
    toml.write_text(toml.read_text().replace("example-org/a3-nmt-bert", "uni-nlp/a3-public"))
    out = tmp_path / "public"
    with pytest.raises(public.PublicError) as err:
        public.build(config.load(course.root), out)
    assert "Colab badge opens" in str(err.value) and "uni-nlp/a3-public" in str(err.value)
    assert not out.exists()


def test_a_solution_in_course_lib_is_refused(course, tmp_path):
    solution = notebooks.read(course.solutions_dir / "1_gru.ipynb")
    block = max(
        (region for cell in solution.cells for region in notebooks.regions(cell).solutions),
        key=len,
    )  # the longest answer of notebook 1, pasted into the library
    models = course.root / "course_lib" / "models.py"
    models.write_text(models.read_text() + "\n" + "\n".join(block) + "\n")
    with pytest.raises(public.PublicError) as err:
        public.build(course, tmp_path / "public", draft=True)
    assert "course_lib/models.py" in str(err.value) and "1_gru" in str(err.value)


def test_an_instructor_line_in_a_released_notebook_is_refused(course, tmp_path):
    solution = notebooks.read(course.solutions_dir / "1_gru.ipynb")
    secret = sorted(leaks.secret_lines(solution))[0]
    path = course.assignments_dir / "1_gru.ipynb"
    nb = notebooks.read(path)
    nb.cells[-1].source += "\n" + secret
    notebooks.write(nb, path)
    with pytest.raises(public.PublicError, match="solution or hidden-test line left"):
        public.build(course, tmp_path / "public", draft=True)


def test_anything_else_in_the_tree_is_refused(course, tmp_path):
    out = public.build(course, tmp_path / "public", draft=True)
    shutil.copytree(course.solutions_dir, out / "solutions")
    (out / "assignments" / "a3" / "answers.txt").write_text("42\n")
    (out / "course_lib" / "reference.ipynb").write_text("{}")
    problems = public.check_tree(course, out)
    assert "unexpected entry in the public tree: solutions" in problems
    assert "unexpected file in the public tree: assignments/a3/answers.txt" in problems
    assert "unexpected file in course_lib: course_lib/reference.ipynb" in problems


def test_the_public_tree_installs_with_pip_and_loads_its_data(course, tmp_path):
    out = public.build(course, tmp_path / "public", draft=True)
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    proc = subprocess.run(
        [*pip, "--target", str(site), str(out)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import course_lib, course_lib.piglatin as p;"
        "assert course_lib.__file__.startswith(sys.argv[1]), course_lib.__file__;"
        "print(len(p.load_pairs()))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(site)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "6408"
