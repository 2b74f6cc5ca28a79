"""Reports: what grading shows, to instructors, TAs and students.

The rows of a grading run, one per student and notebook, with their flags and extra credit
(``rows``); what a run writes from them (``report.write_reports``): grades.csv, canvas.csv and
the summary (``report``), the class report (``classreport``), the students' feedback pages
(``feedback``), the formgrader (``formgrade_server``), student content made inert
(``sanitise`` and its parts) and framed as the student's own (``ownrun``), every page from the
autoescaped Jinja2 templates in ``templates/`` (``pages``). The last stage.
"""

# Its modules:
#   rows: the rows of a grading run (records joined with the gradebook), flags, extra credit
#   report: what a run writes: grades.csv, canvas.csv (LMS), the summary table and histogram
#   classreport: the class report: score distributions, pass rates, failures, flags, seconds
#   feedback: the students' feedback and index pages: tests explained, never shown; answers
#   pages: the HTML pages, from the Jinja2 templates in templates/ (autoescaped)
#   sanitise: student markup made inert before feedback and the formgrader show it
#   safehtml: safe URLs, inert TeX, student HTML and Markdown cleaned (bounded before parsing)
#   gradernotes: the grader's own notes in a graded notebook, which no student output can forge
#   ownrun: the student's own outputs of tagged cells, framed as theirs (skipped or run again)
#   formgrade_server: JupyterLab for make formgrade, nbgrader's pages escaped
