"""The course: what every stage reads, and nothing that runs a notebook.

course.toml and its declared settings (``config``, ``settings``, ``limits``), reading and
writing notebooks (``notebooks``), what each cell is and what a notebook's tests are
(``spec``), the nbgrader course directories with nbgrader's commands and gradebook
(``nbgrader_dir``, ``nbgrader_app``, ``gradebook``), and the demo class made from the
solutions (``demo``). Every other stage starts
here; this stage hands to none.
"""

# Its modules:
#   config: course.toml and the paths derived from it
#   settings: the declared settings of course.toml's tables (types, defaults, help)
#   limits: a grading kernel's resource limits (course.toml's [sandbox])
#   notebooks: reading/writing notebooks (atomically), a cell's release regions
#   spec: what a cell is (nbgrader metadata, tags), a notebook's tests, judge cells, verdicts
#   nbgrader_dir: nbgrader's course directories (which is graded, who handed in), commands, backups
#   nbgrader_app: nbgrader's command line, started faster (every nbgrader command runs it)
#   gradebook: reading scores from the gradebook, writing the judge's verdicts into it
#   demo: the demo class: nine kinds of students generated from the solutions
