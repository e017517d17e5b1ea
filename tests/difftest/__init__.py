"""The differential tester: generated programs run against torch and cextend.

A program is a list of Python statements over named values (v0, v1, ...),
written against a module called `torch`.  The same statements run twice,
once with `torch` bound to torch and once to cextend, on identical data;
after every statement the two namespaces are compared (errors, dtypes,
shapes, values, requires_grad, grad_fn, .grad).  A disagreement is shrunk
to a short program and printed as source that runs with `import torch`
and with `import cextend as torch`.

    values.py      data: nice values, injected 0/+-inf/NaN, literals
    program.py     statements and a program's source
    outcome.py     what a statement left behind, and the comparison
    allowlist.py   the documented deviations (the only place they live)
    session.py     one statement in both libraries, compared
    generator.py   the program generator's core (operands, leaves)
    ops.py         the op vocabulary, derived from cextend's op table
    features.py    views, in-place, arithmetic, autograd features
    functions.py   the custom autograd Functions, one source for both
    shrink.py      delta debugging of a failing program
    run.py         many programs: counts, distinct disagreements, repros
"""
