"""The size guards of :mod:`symattn.expand`: how large an expansion, its truncation, its LaTeX and a leading
coefficient may be.

Each is checked before the work starts (``MAX_TERMS`` while a symbolic
expansion runs), and a refusal names the guard and what would be accepted.
:mod:`symattn.expand` exports them all.
"""

from __future__ import annotations


#: Largest number of native parameters :func:`~symattn.expand.expand` accepts.
MAX_PARAMS = 40

#: Highest power of ``eps`` :func:`~symattn.expand.expand` keeps (``MAX_TRUNCATION - 1``).
MAX_ORDER = 128

#: Largest ``truncation`` :func:`~symattn.expand.expand` accepts (the series modulo ``eps^129``:
#: ``F_0 .. F_128``).
MAX_TRUNCATION = MAX_ORDER + 1

#: Terms :meth:`Expansion.to_latex <symattn.expand.Expansion.to_latex>` writes out entry by entry (factored)
#: at most; past them it says how many entries and terms it left out (the matrix forms are always written).
#: pdflatex sets some 2 000 terms a page.
LATEX_MAX_TERMS = 1500

#: Deepest layer whose leading coefficient :func:`~symattn.expand.leading_coefficient` derives (its formula
#: grows about fivefold per layer: 4 s at layer 5, 20 s at layer 6 on a 2-core machine).
MAX_LEADING_LAYER = 6

#: Largest number of tokens :func:`~symattn.expand.expand` accepts: each adds ``d_0`` symbols of the input and
#: ``d_l`` entries of the output, and a symbolic expansion of even a few tokens is large.
MAX_TOKENS = 64

#: Largest number of terms of any series coefficient during a symbolic expansion (python-flint polynomials);
#: beyond it the computation takes too long (give numbers with ``point``).  The sympy fallback (irrational
#: Taylor coefficients) allows ``max_terms // 200``.
MAX_TERMS = 10**6
