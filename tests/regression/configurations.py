"""The regression grid: command lines whose exact results must not change.

Each entry is ``(name, argv)`` for ``symattn.cli.main`` with ``--json``;
``record.py`` stores the output under ``fixtures/NAME.json`` and
``tests/test_regression.py`` recomputes and compares the exact parts.
The grid covers depths 1-4, widths 2-3 (uniform, bottleneck, non-uniform),
score ranks 1-3, tokens 2-4, the presets, a k = 3 polynomial, lightning
attention, every curve of ``identify``, every collapse event kind of
``observe`` (with and without a bias coordinate), expansions and claims.
"""

SOFTMAX_DEPTHS = [("softmax-l%d" % l, ["--layers", str(l)]) for l in (1, 2, 3)]

NETWORKS = SOFTMAX_DEPTHS + [
    ("cosh-l2", ["--layers", "2", "--normalizer", "cosh"]),
    ("gauss-l2", ["--layers", "2", "--normalizer", "gauss"]),
    ("quadratic-l2", ["--layers", "2", "--normalizer", "quadratic"]),
    ("k3-l1", ["--layers", "1", "--normalizer", "1+x**3+x**4"]),
    ("lightning-l2", ["--layers", "2", "--normalizer", "lightning"]),
    ("widths-232", ["--widths", "2,3,2"]),
    ("widths-323-ranks-12", ["--widths", "3,2,3", "--ranks", "1,2"]),
    ("d3-a2-l1", ["--layers", "1", "--width", "3", "--rank", "2"]),
    ("d3-a3-l1", ["--layers", "1", "--width", "3", "--rank", "3"]),
    ("t2-l2", ["--layers", "2", "--tokens", "2"]),
    ("t4-l1", ["--layers", "1", "--tokens", "4"]),
    ("d3-a2-t2-l1", ["--layers", "1", "--width", "3", "--rank", "2", "--tokens", "2"]),
]

CONFIGURATIONS = (
    [(f"spectrum-{name}", ["spectrum", *argv]) for name, argv in NETWORKS]
    + [
        ("spectrum-softmax-l4", ["spectrum", "--layers", "4"]),
        ("spectrum-cosh-l3", ["spectrum", "--layers", "3", "--normalizer", "cosh"]),
        ("spectrum-bank3-truncation4", ["spectrum", "--layers", "2", "--bank", "3", "--truncation", "4"]),
    ]
    + [(f"identify-{name}", ["identify", "--estimate", "none", *argv]) for name, argv in NETWORKS
       if name not in ("softmax-l3",)]
    + [
        ("identify-input-scaling-l1", ["identify", "--estimate", "none", "--layers", "1", "--curve",
                                       "input-scaling"]),
        ("identify-input-scaling-cosh-l2", ["identify", "--estimate", "none", "--layers", "2", "--normalizer",
                                            "cosh", "--curve", "input-scaling"]),
        ("dimension-hmk-d3-5", ["dimension", "--estimate", "none", "--layers", "2", "--rank", "2",
                                "--width", "3..5"]),
    ]
    + [(f"observe-{name}", ["observe", *argv]) for name, argv in NETWORKS[:4]]
    + [
        ("observe-scores1-l2", ["observe", "--layers", "2", "--collapse", "scores:1"]),
        ("observe-scores2-l3", ["observe", "--layers", "3", "--collapse", "scores:2"]),
        ("observe-values1-l2", ["observe", "--layers", "2", "--collapse", "values:1"]),
        ("observe-valuerank-l2", ["observe", "--widths", "3,3,3", "--collapse", "value-rank:1:1"]),
        ("observe-bias-softmax-l1", ["observe", "--layers", "1", "--width", "3", "--bias-input"]),
        ("observe-bias-cosh-l1", ["observe", "--layers", "1", "--width", "3", "--bias-input", "--normalizer", "cosh"]),
        ("observe-identical-tokens-l2", ["observe", "--layers", "2", "--identical-tokens"]),
        ("observe-exceptional-l2", ["observe", "--layers", "2", "--exceptional", "--max-events", "1"]),
        ("observe-contact-l2", ["observe", "--layers", "2", "--collapse", "scores:1", "--contact"]),
        ("expand-l1-truncation3", ["expand", "--layers", "1", "--truncation", "3"]),
        ("expand-l1-generic1", ["expand", "--layers", "1", "--truncation", "3", "--generic", "1"]),
        ("expand-leading-l2", ["expand", "--layers", "2", "--leading", "2"]),
        ("check-l3", ["check", "--layers", "3", "--claim", "contact_order(3) = 17", "--claim", "kernel = 6",
                      "--claim", "multiplicity(2) = 3", "--claim", "sign_group_order = 1"]),
        ("check-lightning-l2", ["check", "--layers", "2", "--normalizer", "lightning", "--claim",
                                "sign_group_order = 2", "--claim", "dimension = 14"]),
        ("report-l1", ["report", "--layers", "1"]),
    ]
)

#: Keys whose values say how a result was obtained (time, primes, seeds, bounds,
#: adaptive sizes, prose), not what it is: they may change when the engine does.
#: The numerical estimate (``estimate``, its ``estimate_gap``) is not an exact
#: result either; since issue 10 it is computed only when asked for.
VOLATILE_KEYS = {
    "seconds", "exact_seconds", "estimate_seconds", "time", "elapsed", "method", "methods", "estimate_method",
    "estimate_gap", "prime", "primes", "seeds",
    "error_bound", "degree_bound", "bound", "route", "attempts", "bank", "truncation", "note",
    "separation_note", "upper_reason", "estimate", "estimates", "reason", "how", "digits", "dps",
    "floor", "singular_values", "mpmath_singular_values", "float64_singular_values", "slopes",
}

#: Keys with this prefix hold what float64 arithmetic measured (SVDs through the machine's
#: LAPACK, ranks and slopes read off them): they differ between BLAS kernels and thread counts,
#: so even their integers (``float64_rank_estimate``, ``float64_resolved``) are not fixtures.
MACHINE_DEPENDENT_PREFIX = "float64_"


def exact_part(value):
    """The JSON value with only its exact results (recursively).

    Dropped: the volatile keys, the keys of float64 measurements, and every
    float.  An exact result is an integer, a boolean or a string (rationals and
    formulas are strings); a float in a result is a measurement (a slope, a
    singular value, a time, the eps of a numerical run) and never a fixture.
    """
    if isinstance(value, dict):
        return {k: exact_part(v) for k, v in value.items()
                if k not in VOLATILE_KEYS and not k.startswith(MACHINE_DEPENDENT_PREFIX)
                and not isinstance(v, float)}
    if isinstance(value, list):
        return [exact_part(v) for v in value if not isinstance(v, float)]
    return value
