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

__all__ = ["ACCEPTED_CLAIMS", "FORMULA_CLAIMS", "FORMULA_LANGUAGE"]

#: The numeric claims :func:`symattn.check.check_claim` understands (``i`` is a layer, ``n`` an integer).
ACCEPTED_CLAIMS = (
    "contact_order(i) = n",
    "multiplicity(i) = n",
    "identification_order(i) = n",
    "kernel = n",
    "dimension = n",
    "sign_group_order = n",
)

#: The formula claims :func:`symattn.check.check_claims` understands beside the numeric ones: a layer's
#: leading coefficient, and a coefficient ``F_n`` of the expansion along query/key collapse.
FORMULA_CLAIMS = (
    "leading(i) = <matrix formula>",
    "F_n = <matrix formula> (or F_n = 0)",
)

#: The matrix-formula language of :func:`symattn.expand.matrix_formula` and
#: :func:`symattn.expand.check_formula_claim`.
FORMULA_LANGUAGE = (
    "names P, X, H, J, S_0, C_i, What_i and the base point of every block, Qt1, Kt1, Vt1 (also V_1), ... "
    "(matrices), c_k, alpha_i, t and entries such as x_11 (scalars); numbers; + - * / and ** or ^ "
    "(integer powers of scalars, or of square matrices); A.T (transpose); hadamard(A, m) (entrywise power); "
    "ones(m, n); parentheses"
)

#: The normalizer names :func:`symattn.normalizers.as_normalizer` and ``--normalizer`` accept, each with a
#: one-line description: the one list behind the help, the errors and the documentation (a test compares
#: README.md and the docs with it).  Anything else is read as an expression in ``x``.
NORMALIZER_PRESETS = (
    ("softmax", "exp(x), the normalizer of softmax attention"),
    ("exp", "exp(x), another name of softmax"),
    ("cosh", "cosh(x)"),
    ("quadratic", "1 + x**2"),
    ("gauss", "exp(x**2)"),
    ("softplus", "log(1 + exp(x))"),
    ("sigmoid", "1/(1 + exp(-x))"),
    ("lightning", "no normalization, S(A) = A: HMK's lightning attention, a comparison case"),
    ("generic(k)", "generic Taylor data 1 + c_k x^k + c_(k+1) x^(k+1) + ...; also written generic (k = 1), "
                   "generic(k=2), generic(2, even)"),
)

#: The names in one line, for help texts and error messages.
PRESET_SUMMARY = "softmax (= exp), cosh, quadratic, gauss, softplus, sigmoid, lightning, generic(k[, even])"
