"""Reports: what grading shows, to instructors, TAs and students.

grades.csv, canvas.csv and the summary (``report``), the class report (``classreport``), the
students' feedback pages (``feedback``), the formgrader (``formgrade_server``), student content
made inert (``sanitise`` and its parts) and framed as the student's own (``ownrun``), every page
from the autoescaped Jinja2 templates in ``templates/`` (``pages``). The last stage.
"""

# Its modules:
#   report: grades.csv, canvas.csv (LMS), the summary table and histogram, index pages
#   classreport: the class report: score distributions, pass rates, failures, flags, seconds
#   feedback: the students' feedback pages: tests explained, never shown; written answers
#   pages: the HTML pages, from the Jinja2 templates in templates/ (autoescaped)
#   sanitise: student markup made inert before feedback and the formgrader show it
#   safehtml: safe URLs, inert TeX, student HTML cleaned (bounded before any parser)
#   safemarkdown: student Markdown made inert, checked by rendering it as nbconvert will
#   gradernotes: the grader's own notes in a graded notebook, which no student output can forge
#   ownrun: the student's own outputs of tagged cells, framed as theirs (skipped or run again)
#   formgrade_server: JupyterLab for make formgrade, nbgrader's pages escaped
