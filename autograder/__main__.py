"""The autograder's command line (the Makefile's release, grade, collect, formgrade, bench).

    python -m autograder [--root DIR] release [--jobs N] [--draft]
    python -m autograder [--root DIR] grade [--jobs N] [--cell-timeout S] [--demo] [--regrade]
                                            [--student ID ...]
    python -m autograder [--root DIR] demo
    python -m autograder [--root DIR] collect ZIP
    python -m autograder [--root DIR] formgrade [--demo]
    python -m autograder [--root DIR] bench [--students N]

``--root`` is the course repository (default: this one); its ``course.toml`` holds the settings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import config


def _release(course: config.Course, args: argparse.Namespace) -> int:
    from .release import ReleaseError, release

    try:
        release(course, jobs=args.jobs, draft=args.draft)
    except ReleaseError as err:
        print(f"\nRELEASE FAILED\n{err}", file=sys.stderr)
        return 1
    return 0


def _grade(course: config.Course, args: argparse.Namespace) -> int:
    from .grading import grade

    result = grade(
        course,
        jobs=args.jobs,
        cell_timeout=args.cell_timeout,
        demo_class=True if args.demo else None,
        regrade=args.regrade,
        students=args.student or None,
    )
    if result.incomplete:
        print(f"{len(result.incomplete)} student(s) not graded to the end: run it again")
        return 1
    return 0


def _demo(course: config.Course, args: argparse.Namespace) -> int:
    from . import demo, nbgrader_dir

    gdir = nbgrader_dir.demo(course)
    nbgrader_dir.generate_assignment(course, gdir)
    for student in demo.build(course, gdir):
        print(f"{student.student_id:18} {student.description}")
    print(f"demo class written to {gdir.submitted}")
    return 0


def _collect(course: config.Course, args: argparse.Namespace) -> int:
    from .collect import CollectError, collect

    try:
        collect(course, args.zip)
    except CollectError as err:
        print(f"\nNOTHING COLLECTED\n{err}", file=sys.stderr)
        return 1
    return 0


def _formgrade(course: config.Course, args: argparse.Namespace) -> int:
    from .nbgrader_dir import formgrade

    return formgrade(course, demo_class=args.demo)


def _bench(course: config.Course, args: argparse.Namespace) -> int:
    from .bench import bench

    bench(course, students=args.students)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--root", type=Path, default=None, help="course repository (course.toml)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("release", help="generate, check and publish the student notebooks")
    p.add_argument("--jobs", type=int, default=None, help="notebooks run in parallel")
    p.add_argument(
        "--draft", action="store_true", help="allow a placeholder repository (checks only)"
    )
    p.set_defaults(run=_release)

    p = sub.add_parser("grade", help="grade the submissions (the demo class when there are none)")
    p.add_argument("--jobs", type=int, default=None, help="students graded in parallel")
    p.add_argument("--cell-timeout", type=int, default=None, help="seconds per cell")
    p.add_argument("--demo", action="store_true", help="grade the demo class")
    p.add_argument("--regrade", action="store_true", help="regrade unchanged submissions too")
    p.add_argument("--student", action="append", help="grade only this student (repeatable)")
    p.set_defaults(run=_grade)

    p = sub.add_parser("demo", help="write the demo class's submissions")
    p.set_defaults(run=_demo)

    p = sub.add_parser("collect", help="import an LMS download zip into submitted/")
    p.add_argument("zip", type=Path)
    p.set_defaults(run=_collect)

    p = sub.add_parser("formgrade", help="start JupyterLab with nbgrader's formgrader")
    p.add_argument("--demo", action="store_true", help="the demo class's gradebook")
    p.set_defaults(run=_formgrade)

    p = sub.add_parser("bench", help="seconds per student: serial, parallel, plain nbgrader")
    p.add_argument("--students", type=int, default=4)
    p.set_defaults(run=_bench)

    args = parser.parse_args(argv)
    try:
        course = config.load(args.root)
    except config.ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    return args.run(course, args)


if __name__ == "__main__":
    sys.exit(main())
