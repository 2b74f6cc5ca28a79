"""The autograder's command line (the Makefile's release, grade, merge, gradescope, collect,
formgrade, bench, similarity).

    python -m autograder [--root DIR] release [--jobs N] [--draft] [--notebook NAME ...] [--all]
    python -m autograder [--root DIR] public [--out DIR] [--draft]
    python -m autograder [--root DIR] grade [--jobs N] [--cell-timeout S] [--demo] [--regrade]
                                            [--student ID ...] [--shard I/N]
    python -m autograder [--root DIR] merge [--shards N] [--demo]
    python -m autograder [--root DIR] gradescope [--torch VERSION]
    python -m autograder [--root DIR] demo
    python -m autograder [--root DIR] collect ZIP
    python -m autograder [--root DIR] formgrade [--demo]
    python -m autograder [--root DIR] bench [--students N]
    python -m autograder [--root DIR] feedback [--demo]
    python -m autograder [--root DIR] audit [--cell GRADE_ID] [--jobs N] [--fresh] [--no-confirm]
    python -m autograder [--root DIR] similarity [--reference DIR] [--demo]
    python -m autograder [--root DIR] settings

``--root`` is the course repository (default: this one); its ``course.toml`` holds the settings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.course import config


def _release(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.publish.release import ReleaseError, release

    try:
        release(
            course,
            jobs=args.jobs,
            draft=args.draft,
            only=tuple(args.notebook or ()),
            everything=args.all,
        )
    except ReleaseError as err:
        print(f"\nRELEASE FAILED\n{err}", file=sys.stderr)
        return 1
    return 0


def _public(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.publish.public import PublicError, build

    try:
        out = build(course, out=args.out, draft=args.draft)
    except PublicError as err:
        print(f"\nNOTHING WRITTEN\n{err}", file=sys.stderr)
        return 1
    print(f"public tree written to {out}: push it to https://github.com/{course.github_repo}")
    return 0


def _grade(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.deploy import shards
    from autograder.marking import grading

    try:
        shard = shards.Shard.parse(args.shard) if args.shard else None
    except shards.ShardError as err:
        print(err, file=sys.stderr)
        return 2
    how = {
        "jobs": args.jobs,
        "cell_timeout": args.cell_timeout,
        "demo_class": True if args.demo else None,
        "regrade": args.regrade,
        "students": args.student or None,
    }
    result = shards.grade(course, shard, **how) if shard else grading.grade(course, **how)
    if result.canary:
        print("the canary failed: nobody was graded (see above)")
        return 1
    if result.incomplete:
        print(f"{len(result.incomplete)} student(s) not graded to the end: run it again")
        return 1
    if result.unanswered:
        print("no kernel answered the tests: the grading set-up is broken (see above)")
        return 1
    return 0


def _merge(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.deploy.shards import ShardError, merge

    try:
        result = merge(course, count=args.shards, demo_class=True if args.demo else None)
    except ShardError as err:
        print(f"\nNOTHING MERGED\n{err}", file=sys.stderr)
        return 1
    if result.incomplete or result.unassigned:
        print("some students were not graded to the end, or by no shard: see above")
        return 1
    return 0


def _gradescope(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.deploy.gradescope import NotProven, build

    try:
        build(course, torch_version=args.torch)
    except NotProven:  # the canary's message is above
        print("\nNOT BUILT: the canary failed in the zip's own layout (see above)")
        return 1
    return 0


def _demo(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.course import demo, nbgrader_dir

    gdir = nbgrader_dir.demo(course)
    nbgrader_dir.generate_assignment(course, gdir)
    for student in demo.build(course, gdir):
        print(f"{student.student_id:18} {student.description}")
    print(f"demo class written to {gdir.submitted}")
    return 0


def _collect(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.handin.collect import CollectError, collect

    try:
        collect(course, args.zip)
    except CollectError as err:
        print(f"\nNOTHING COLLECTED\n{err}", file=sys.stderr)
        return 1
    return 0


def _formgrade(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.course.nbgrader_dir import formgrade

    return formgrade(course, demo_class=args.demo)


def _settings(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.course.settings import describe

    current = {name: getattr(course, name) for name in config.TABLES}
    print(f"# {course.root / config.CONFIG_FILE}: every setting, its value, type and meaning")
    print(describe(config.TABLES, current), end="")
    return 0


def _bench(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.tools.bench import bench

    bench(course, students=args.students)
    return 0


def _feedback(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.marking.grading import rewrite_reports

    try:
        rewrite_reports(course, demo_class=True if args.demo else None)
    except FileNotFoundError as err:
        print(f"nothing graded yet ({err.filename}): run make grade first", file=sys.stderr)
        return 1
    return 0


def _audit(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.quality.audit import audit, summary, write

    try:
        report = audit(
            course, cell=args.cell, jobs=args.jobs, fresh=args.fresh, confirm=not args.no_confirm
        )
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    write(report, course.out_dir)
    print(f"full report: {course.out_dir / 'audit.md'} (and audit.json)\n")
    print(summary(report, course.audit.show))  # its last line: audit: PASS or FAIL
    return 1 if report.weak or report.problems else 0


def _similarity(course: config.Course, args: argparse.Namespace) -> int:
    from autograder.tools.similarity import run

    try:
        run(course, reference=args.reference, demo_class=True if args.demo else None)
    except FileNotFoundError as err:
        print(f"\nNOTHING WRITTEN\n{err}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description=__doc__.split("\n\n")[0],  # its first paragraph
    )
    parser.add_argument("--root", type=Path, default=None, help="course repository (course.toml)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("release", help="generate, check and publish the student notebooks")
    p.add_argument("--jobs", type=int, default=None, help="notebooks run in parallel")
    p.add_argument(
        "--draft", action="store_true", help="allow a placeholder repository (checks only)"
    )
    runs = p.add_mutually_exclusive_group()
    runs.add_argument(
        "--notebook",
        nargs="+",
        metavar="NAME",
        help="run only these notebooks (e.g. 1_gru); the others must be unchanged to publish",
    )
    runs.add_argument(
        "--all",
        action="store_true",
        help="run every notebook, changed since the last release or not",
    )
    p.set_defaults(run=_release)

    p = sub.add_parser("public", help="write the student-facing repository (after release)")
    p.add_argument("--out", type=Path, default=None, help="default: autograder/out/public")
    p.add_argument(
        "--draft", action="store_true", help="allow a placeholder repository (checks only)"
    )
    p.set_defaults(run=_public)

    p = sub.add_parser("grade", help="grade the submissions (the demo class when there are none)")
    p.add_argument("--jobs", type=int, default=None, help="students graded in parallel")
    p.add_argument("--cell-timeout", type=int, default=None, help="seconds per cell")
    p.add_argument("--demo", action="store_true", help="grade the demo class")
    p.add_argument("--regrade", action="store_true", help="regrade unchanged submissions too")
    p.add_argument("--student", action="append", help="grade only this student (repeatable)")
    p.add_argument(
        "--shard", default=None, metavar="I/N", help="grade shard I of N (0 to N-1): shards.py"
    )
    p.set_defaults(run=_grade)

    p = sub.add_parser("merge", help="combine the shards of `grade --shard` into one report")
    p.add_argument("--shards", type=int, default=None, help="N, when shards of several N exist")
    p.add_argument("--demo", action="store_true", help="the demo class's shards")
    p.set_defaults(run=_merge)

    p = sub.add_parser("gradescope", help="build autograder/out/gradescope-autograder.zip")
    p.add_argument("--torch", default="2.13.0", help="the torch version setup.sh pins")
    p.set_defaults(run=_gradescope)

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

    p = sub.add_parser(
        "feedback", help="rewrite the feedback pages and reports from the gradebook (manual grades)"
    )
    p.add_argument("--demo", action="store_true", help="the demo class")
    p.set_defaults(run=_feedback)

    p = sub.add_parser("audit", help="mutation testing of the graded tests (audit.py)")
    p.add_argument("--cell", default=None, help="only this answer cell (or the one a test follows)")
    p.add_argument("--jobs", type=int, default=None, help="kernels in parallel")
    p.add_argument("--fresh", action="store_true", help="every mutant in a fresh kernel (slow)")
    p.add_argument(
        "--no-confirm", action="store_true", help="do not grade survivors again in fresh kernels"
    )
    p.set_defaults(run=_audit)

    p = sub.add_parser("settings", help="every setting of course.toml: value, type, meaning")
    p.set_defaults(run=_settings)

    p = sub.add_parser("similarity", help="instructors: similar answers (similarity.py)")
    p.add_argument("--reference", type=Path, default=None, help="a folder of reference code")
    p.add_argument("--demo", action="store_true", help="the demo class")
    p.set_defaults(run=_similarity)

    for command in sub._choices_actions:  # each command's --help opens with its line above
        sub.choices[command.dest].description = command.help
    args = parser.parse_args(argv)
    try:
        course = config.load(args.root)
    except config.ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    return args.run(course, args)


if __name__ == "__main__":
    sys.exit(main())
