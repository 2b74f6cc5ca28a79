"""Quality: how good are the course's tests? (instructor tools, no student's grade)

Known-wrong and other correct answers graded as a student's would be (``variants``), and the
mutants that ``make audit`` makes from the solutions (``mutants``, ``mutation_*``) and grades
(``audit``), through the kernel layer (``kernels``). Reports to the instructor; hands to none.
"""

# Its modules:
#   audit: make audit: grading the mutants, the kill rate of every graded test
#   mutants: wrong variants of the solutions, made by AST operators (make audit)
#   mutation_operators: the AST operators: the small changes a mutant makes
#   mutation_scope: the names bound before a statement (the operator 'earlier')
#   variants: grading changed answers (known-wrong and other correct ones) without nbgrader
