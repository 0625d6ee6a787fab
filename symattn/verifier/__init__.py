"""An independent checker of symattn's certificates: re-check a result without trusting symattn.

Four kinds of certificate: a lower bound of the dimension of the function
space, the decay spectrum of the native Jacobian along a curve
(:mod:`symattn.verifier.spectrum` says what it proves), the identification
orders of the blocks (:mod:`symattn.verifier.orders`), and the ranks of the
blocks on a collapsed set (:mod:`symattn.verifier.observe`); and bundles of
them (kind ``"identify"``: a report's dimension and orders; kind
``"claims"``: the claims of ``symattn check`` with the certificates they
were settled against, :mod:`symattn.verifier.claims`, and formula claims
decided at their own point, :mod:`symattn.verifier.formulas`).

A certificate (:mod:`symattn.certificates` writes them) holds everything a
claim rests on: the architecture, each normalizer's Taylor coefficients as
exact rationals, the curve, a prime ``p``, a truncation ``N``, an integer point
and bank, and a witness.  This package re-computes the witness from those
numbers alone with its own plain forward pass over ``GF(p)[eps]/(eps^N)``
(:mod:`symattn.verifier.network`), and imports nothing but the standard
library, numpy and itself, so that a reader can audit a few hundred lines
instead of the engine.  A dimension certificate of the integer-score route
(field ``integer_scores``) has layer 1 at an integer point: the checker
computes its exact integer scores ``m`` and evaluates softmax there as
``e^m exp(A - m)``, with the transcendental ``e`` sent to a residue.

The checker binds every normalizer's name and expression to the
coefficients it computes with (:mod:`symattn.verifier.taylor`), prints
what it could not check apart from its conclusion, and bounds what it reads
and computes before it starts (:mod:`symattn.verifier.limits`).

Its products of residue matrices run on float64 BLAS (exact below ``2^53``).
Like the engine, it is fastest with BLAS on one thread (``symattn verify``
sets that; in your own process use ``OPENBLAS_NUM_THREADS=1`` or
threadpoolctl): on a busy machine BLAS threads mostly wait for each other.

Examples
--------
>>> from symattn.verifier import verify
>>> verify({"schema": "symattn-certificate", "version": 1, "kind": "rank"}).problem
"kind 'rank': this checker checks 'dimension lower bound', 'spectrum', 'identification orders', 'observability', 'identify' and 'claims'"
"""

from .check import SCHEMA, VERSION, CertificateError, CertificateTooLarge, VerificationReport, verify

__all__ = ["SCHEMA", "VERSION", "CertificateError", "CertificateTooLarge", "VerificationReport", "verify"]
