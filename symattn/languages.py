"""What user text may say: the claim and formula languages, in words.

The help of ``symattn check`` and the errors of :mod:`symattn.check` and
:mod:`symattn.expand` describe the accepted text with these.  The module holds
words only (no parser, no import of sympy), so that the command line can build
its help before anything heavy loads; the parsers are
:func:`symattn.check.parse_claim` and :func:`symattn.expand.matrix_formula`.

Examples
--------
>>> ACCEPTED_CLAIMS[0]
'contact_order(i) = n'
>>> "C_i" in FORMULA_LANGUAGE
True
"""

__all__ = ["ACCEPTED_CLAIMS", "FORMULA_LANGUAGE"]

#: The numeric claims :func:`symattn.check.check_claim` understands (``i`` is a layer, ``n`` an integer).
ACCEPTED_CLAIMS = (
    "contact_order(i) = n",
    "multiplicity(i) = n",
    "identification_order(i) = n",
    "kernel = n",
    "dimension = n",
    "sign_group_order = n",
)

#: The matrix-formula language of :func:`symattn.expand.matrix_formula` and
#: :func:`symattn.expand.check_formula_claim`.
FORMULA_LANGUAGE = (
    "names P, X, H, J, C_i, What_i (matrices), c_k, alpha_i, t (scalars); numbers; + - * / and ** or ^ "
    "(integer powers of scalars, or of square matrices); A.T (transpose); hadamard(A, m) (entrywise power); "
    "parentheses"
)
