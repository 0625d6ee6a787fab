"""The check of a certificate as a script for SageMath or Macaulay2: a referee re-runs it in another system.

:func:`export_script` reads a dimension or spectrum certificate with the
checker's own validation (every number an integer it checked, every name one
it wrote itself), and writes a self-contained script that recomputes the
witness minor in the other system's own arithmetic and finds its pivot
valuations:

* the ring ``GF(p)[eps, d] / (eps^N, d^2)``: one forward pass per witness
  column, the column's parameter moved by ``d`` (in the curve's coordinates,
  ``eps^m B -> eps^m (B + d E)``; in the native parameters ``W -> W + d E``),
  so the coefficient of ``d`` in an output entry is that entry's derivative,
  known mod ``eps^N``;
* ``s(a) = sum_n c_n a^n`` with the certificate's Taylor coefficients (exact
  since every score lies in the ideal ``(eps, d)``, whose ``N + 1``-th power
  is 0; for a polynomial ``s`` every coefficient), column sums inverted as
  ``u0^-1 sum_k (-(u - u0) / u0)^k``;
* a dimension certificate's ``integer_scores`` (layer 1 at an integer point,
  ``s = exp``): the script computes the exact integer scores
  ``m = <K x_j, Q x_k>`` of layer 1 from the integer point and inputs itself,
  checks ``|m| < p/2`` and that each score is ``m`` at ``eps = 0``, and takes
  ``s(A) = base^m s(A - m)`` (``e^m`` with the transcendental ``e`` sent to
  the residue ``base``, a ring homomorphism);
* biases added to every token (``Q x + b_Q`` and the like), and feed-forward
  blocks ``W_out s(W_in x + b_in) + b_out`` with the activation's own Taylor
  coefficients (exact for the same reason: its argument lies in ``(eps, d)``);
* least-valuation full pivoting of the ``r x r`` minor over ``GF(p)[[eps]]``
  mod ``eps^N``; the script prints ``verified`` when the pivot valuations are
  the claimed ones, all below ``N``, and ``NOT verified`` with the difference
  otherwise (exit status 1).

The script repeats no code of symattn: it is written out from the
certificate's numbers, in the other system's language.

This module imports nothing but the standard library and its own package:
it is part of the independent checker.

Examples
--------
>>> from symattn.verifier.export import SYSTEMS
>>> SYSTEMS
('sage', 'm2')
"""

from __future__ import annotations

from .check import (
    CertificateError, CertificateTooLarge, _blocks, _Certificate, _load, _read_architecture, _read_curve,
    _read_field_data, _read_integer_scores, _read_normalizers, _read_point_and_bank, _read_witness, parameter_names,
)
from .disagreement import Disagreement
from .limits import TooLarge

__all__ = ["SYSTEMS", "export_script"]

#: The systems a certificate's check is exported to.
SYSTEMS = ("sage", "m2")

_KINDS = ("dimension lower bound", "spectrum")


def _read(document: dict) -> tuple:
    """The validated certificate and its kind; a :class:`Disagreement` for anything unreadable."""
    if document.get("schema") != "symattn-certificate" or document.get("version") != 1:
        raise Disagreement("not a version-1 symattn certificate")
    kind = document.get("kind")
    if kind not in _KINDS:
        raise Disagreement(f"kind {str(kind)[:40]!r}: the exports cover dimension and spectrum certificates (a "
                           "bundle's parts with --part N)")
    checked: list = []
    cert = _read_architecture(document, checked)
    _read_field_data(document, cert, checked)
    _read_normalizers(document, cert, checked)
    _read_curve(document, cert, checked)
    _read_point_and_bank(document, cert, checked)
    _read_integer_scores(document, cert, checked, kind)
    _read_witness(document, cert, checked)
    return cert, kind


def export_script(source, system: str, part: int | None = None) -> str:
    """The check of a dimension or spectrum certificate as a SageMath (``"sage"``) or Macaulay2 (``"m2"``) script.

    Parameters
    ----------
    source : str, pathlib.Path or dict
        The certificate (a path, its JSON text, or the parsed dict).
    system : {"sage", "m2"}
    part : int, optional
        For a bundle (kind ``"identify"`` or ``"claims"``): which of its
        ``parts`` to export (0-based, a dimension or spectrum certificate).

    Returns
    -------
    str
        The script: ``sage -python FILE`` (or ``python FILE`` with
        passagemath installed) and ``M2 --script FILE`` run it.

    Raises
    ------
    CertificateError
        For an unknown system, or a certificate that cannot be read (named).

    Examples
    --------
    >>> from symattn.certificates import dimension_certificate
    >>> from symattn.model import Architecture
    >>> certificate = dimension_certificate(Architecture.uniform(layers=1, width=1, tokens=2))
    >>> script = export_script(certificate, "sage")
    >>> "p = 1048573" in script and "claimed = [0, 0]" in script
    True
    >>> "p = 1048573;" in export_script(certificate, "m2")
    True
    >>> export_script(certificate, "sage", part=0)
    Traceback (most recent call last):
    ...
    symattn.verifier.check.CertificateError: --part 0: this certificate is not a bundle (kind 'dimension lower bound'); export it without --part
    >>> export_script(certificate, "maple")
    Traceback (most recent call last):
    ...
    symattn.verifier.check.CertificateError: --export maple: the scripts are for sage (SageMath) and m2 (Macaulay2)
    """
    if system not in SYSTEMS:
        raise CertificateError(f"--export {system}: the scripts are for sage (SageMath) and m2 (Macaulay2)")
    document = _load(source)
    document = _the_part(document, part)
    try:
        cert, kind = _read(document)
    except Disagreement as err:
        raise CertificateError(f"cannot export this certificate: {str(err)[:300]}") from None
    except TooLarge as err:
        raise CertificateTooLarge(str(err)) from None
    data = _data(cert, kind == "spectrum")
    claim = kind + ": rank >= " + str(cert.rank)
    return _sage(data, claim) if system == "sage" else _m2(data, claim)


def _the_part(document: dict, part: int | None) -> dict:
    """The certificate to export: ``document`` itself, or its part ``part`` when it is a bundle."""
    kind = document.get("kind")
    bundle = kind in ("identify", "claims")
    if part is None:
        if bundle:
            parts = document.get("parts") if isinstance(document.get("parts"), list) else []
            kinds = ", ".join(f"{n}: {p.get('kind')}" for n, p in enumerate(parts[:20]) if isinstance(p, dict))
            raise CertificateError(f"{'an' if kind == 'identify' else 'a'} {kind} bundle is exported one part at a time: give --part N "
                                   f"(its parts: {kinds or 'none'})")
        return document
    if not bundle:
        raise CertificateError(f"--part {part}: this certificate is not a bundle (kind {str(kind)[:40]!r}); export "
                               "it without --part")
    parts = document.get("parts")
    if not isinstance(parts, list) or not 0 <= part < len(parts) or not isinstance(parts[part], dict):
        count = len(parts) if isinstance(parts, list) else 0
        raise CertificateError(f"--part {part}: the bundle has parts 0 .. {count - 1}" if count else
                               f"--part {part}: the bundle has no parts")
    if parts[part].get("kind") not in _KINDS:
        raise CertificateError(f"--part {part} is of kind {str(parts[part].get('kind'))[:40]!r}: the exports "
                               "cover dimension and spectrum certificates")
    return parts[part]


def _data(cert: _Certificate, native: bool) -> dict:
    """Every number the script needs, as integers and lists of integers (block names by index)."""
    blocks = _blocks(cert.widths, cert.score_ranks, cert.heads, cert.bias, cert.ffn)
    index = {name: n for n, (name, _) in enumerate(blocks)}
    names = parameter_names(cert.widths, cert.score_ranks, cert.heads, cert.bias, cert.ffn)
    columns = []
    for name in cert.columns:  # a name the checker wrote itself: block[row,col]
        assert name in names
        block, _, entry = name.partition("[")
        row, col = (int(v) for v in entry.rstrip("]").split(","))
        columns.append([index[block], row, col])
    # per layer, per head: the indices of Q, K, V (and bQ, bK, bV); per layer: Win, Wout (and bin, bout) or []
    layers, ffns, activations = [], [], []
    head_blocks = ("Q", "K", "V", "bQ", "bK", "bV") if cert.bias else ("Q", "K", "V")
    ffn_blocks = ("Win", "Wout", "bin", "bout") if cert.bias else ("Win", "Wout")
    for i in range(1, len(cert.widths)):
        suffixes = [f"{i}"] if cert.heads[i - 1] == 1 else [f"{{{i},{h}}}" for h in range(1, cert.heads[i - 1] + 1)]
        layers.append([[index[f"{name}_{suffix}"] for name in head_blocks] for suffix in suffixes])
        has_ffn = bool(cert.ffn and cert.ffn[i - 1])
        ffns.append([index[f"{name}_{i}"] for name in ffn_blocks] if has_ffn else [])
        activation = cert.activations[i - 1] if has_ffn else None
        activations.append([int(activation["polynomial"]), list(activation["taylor"])] if activation else [])
    used = sorted({b for b, _, _ in cert.rows})
    return {
        "p": cert.prime, "N": cert.truncation, "native": native, "causal": cert.causal, "residual": cert.residual,
        "input_power": cert.input_power,
        "integer_base": cert.integer_scores["base"] if cert.integer_scores else 0,
        "powers": [cert.powers[name] for name, _ in blocks],
        "point": [cert.point[name] for name, _ in blocks],
        "block_names": [name for name, _ in blocks],
        "layers": layers, "ffns": ffns, "activations": activations,
        "normalizers": [[int(z["lightning"]), int(z["polynomial"]), list(z["taylor"])] for z in cert.normalizers],
        "inputs": used, "bank": [cert.bank[b] for b in used],
        "rows": [[used.index(b), i, j] for b, i, j in cert.rows],
        "columns": columns, "claimed": sorted(cert.valuations),
    }


def _sage(data: dict, claim: str) -> str:
    lines = [
        "# Re-check of a symattn certificate in SageMath, written by `symattn verify FILE --export sage`.",
        f"# The certificate claims ({claim}): the minor of the Jacobian series J(eps) below has pivot",
        "# valuations `claimed` under least-valuation pivoting, all below eps^N, hence its rank mod (p, eps^N).",
        "# Run: sage -python THIS_FILE   (or python THIS_FILE where passagemath is installed)",
        "import sys",
        "try:",
        "    from sage.all import GF, PolynomialRing, PowerSeriesRing",
        "except ImportError:  # a modular install",
        "    from sage.all__sagemath_singular import GF, PolynomialRing, PowerSeriesRing",
        "",
        f"p = {data['p']}",
        f"N = {data['N']}",
        f"native = {data['native']!r}  # derivatives in the native parameters (a spectrum), else in the curve's",
        f"causal = {data['causal']!r}",
        f"residual = {data['residual']!r}",
        f"input_power = {data['input_power']}  # the inputs are eps^input_power X",
        f"integer_base = {data['integer_base']}  # layer 1 at integer scores: e sent to this residue (0: no)",
        f"block_names = {data['block_names']!r}",
        f"powers = {data['powers']!r}  # block n is eps^powers[n] times its entry in `point`",
        f"point = {data['point']!r}",
        f"layers = {data['layers']!r}  # per layer, per head: the indices of its Q, K, V (and bQ, bK, bV) blocks",
        f"normalizers = {data['normalizers']!r}  # per layer: [lightning, polynomial, Taylor residues of s/s(0)]",
        f"ffns = {data['ffns']!r}  # per layer: the indices of Win, Wout (and bin, bout), or [] without one",
        f"activations = {data['activations']!r}  # per layer: [polynomial, Taylor residues of s], or []",
        f"bank = {data['bank']!r}",
        f"rows = {data['rows']!r}  # witness rows: (input, output row, output token)",
        f"columns = {data['columns']!r}  # witness columns: (block, row, column)",
        f"claimed = {data['claimed']!r}",
        "",
        "F = GF(p)",
        "R = PolynomialRing(F, ['eps', 'd'])",
        "eps, d = R.gens()",
        "# jets: a value and one direction d, series mod eps^N",
        "J = R.quotient(R.ideal([eps**N, d**2]), names=('e', 'dd'))",
        "e, dd = J.gens()",
        "",
        "def mat(rows_):",
        "    return [[J(x) for x in row] for row in rows_]",
        "",
        "def mul(A, B):",
        "    return [[sum((A[i][k] * B[k][j] for k in range(len(B))), J(0)) for j in range(len(B[0]))]",
        "            for i in range(len(A))]",
        "",
        "def transpose(A):",
        "    return [list(row) for row in zip(*A)]",
        "",
        "def inverse(u):",
        "    # u = u0 + n, n in (eps, d) and (eps, d)^(N+1) = 0: 1/u = u0^-1 sum_k (-n/u0)^k",
        "    u0 = F(u.lift().constant_coefficient())",
        "    if u0 == 0:",
        "        print('NOT verified: a column sum of s(A) is 0 mod p at eps = 0'); sys.exit(1)",
        "    x = -(u - u0) / u0",
        "    total, power = J(1), J(1)",
        "    for _ in range(N + 1):",
        "        power = power * x",
        "        total = total + power",
        "    return total / u0",
        "",
        "def s_of(a, taylor, polynomial, what='a score'):",
        "    if not polynomial and F(a.lift().constant_coefficient()) != 0:",
        "        print('NOT verified: %s is nonzero at eps = 0' % what); sys.exit(1)",
        "    value = J(0)",
        "    for c in reversed(taylor):  # Horner: sum_n c_n a^n",
        "        value = value * a + c",
        "    return value",
        "",
        "def exact_scores(heads, X):",
        "    # layer 1 at integer scores: m_jk = <K x_j, Q x_k> over the integers, from the point and the input",
        "    out = []",
        "    for blocks in heads:",
        "        Q, K = point[blocks[0]], point[blocks[1]]",
        "        QX = [[sum(Q[a][i] * X[i][k] for i in range(len(X))) for k in range(len(X[0]))] for a in range(len(Q))]",
        "        KX = [[sum(K[a][i] * X[i][k] for i in range(len(X))) for k in range(len(X[0]))] for a in range(len(K))]",
        "        m = [[sum(KX[a][j] * QX[a][k] for a in range(len(Q))) for k in range(len(X[0]))] for j in range(len(X[0]))]",
        "        if any(2 * abs(v) >= p for row in m for v in row):",
        "            print('NOT verified: a layer-1 score is not below p/2'); sys.exit(1)",
        "        out.append(m)",
        "    return out",
        "",
        "def s_at_integer(a, m, taylor):",
        "    # exp(a) = e^m exp(a - m), e sent to integer_base (a ring homomorphism: e is transcendental)",
        "    if F(a.lift().constant_coefficient()) != F(m):",
        "        print('NOT verified: a layer-1 score is not its exact integer score %d at eps = 0' % m); sys.exit(1)",
        "    return J(F(integer_base) ** m) * s_of(a - m, taylor, False)",
        "",
        "def plus_bias(M, b):",
        "    # M + b 1^T: the bias column added to every token",
        "    return [[x + b[i][0] for x in row] for i, row in enumerate(M)]",
        "",
        "def attention(X, heads, normalizer, params, integers=None):",
        "    lightning, polynomial, taylor = normalizer",
        "    t = len(X[0])",
        "    out = None",
        "    for h, blocks in enumerate(heads):",
        "        Q, K, V = (params[n] for n in blocks[:3])",
        "        QX, KX, VX = mul(Q, X), mul(K, X), mul(V, X)",
        "        if len(blocks) == 6:  # biases: Q x + b_Q, K x + b_K, V x + b_V for every token x",
        "            QX, KX, VX = (plus_bias(M, params[n]) for M, n in zip((QX, KX, VX), blocks[3:]))",
        "        A = mul(transpose(KX), QX)  # A_jk = <K x_j + b_K, Q x_k + b_Q>",
        "        if lightning:",
        "            S = [[A[j][m] if (not causal or j <= m) else J(0) for m in range(t)] for j in range(t)]",
        "        else:",
        "            s = [[(s_of(A[j][m], taylor, polynomial) if integers is None else",
        "                   s_at_integer(A[j][m], integers[h][j][m], taylor)) if (not causal or j <= m) else J(0)",
        "                  for m in range(t)] for j in range(t)]",
        "            sums = [inverse(sum((s[j][m] for j in range(t)), J(0))) for m in range(t)]",
        "            S = [[s[j][m] * sums[m] for m in range(t)] for j in range(t)]  # each query's column normalized",
        "        head = mul(VX, S)",
        "        out = head if out is None else [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(out, head)]",
        "    if residual:",
        "        out = [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(out, X)]",
        "    return out",
        "",
        "def feed_forward(X, blocks, activation, params):",
        "    # W_out s(W_in x + b_in) + b_out for every token x (plus x with a residual stream)",
        "    polynomial, taylor = activation",
        "    pre = mul(params[blocks[0]], X)",
        "    if len(blocks) == 4:",
        "        pre = plus_bias(pre, params[blocks[2]])",
        "    hidden = [[s_of(a, taylor, polynomial, \"the feed-forward block's argument\") for a in row] for row in pre]",
        "    out = mul(params[blocks[1]], hidden)",
        "    if len(blocks) == 4:",
        "        out = plus_bias(out, params[blocks[3]])",
        "    if residual:",
        "        out = [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(out, X)]",
        "    return out",
        "",
        "def d_coefficients(x):",
        "    # the coefficient of d, as the list of its coefficients of eps^0 .. eps^(N-1)",
        "    f = x.lift()",
        "    return [f.monomial_coefficient(eps**n * d) for n in range(N)]",
        "",
        "S = PowerSeriesRing(F, 't', default_prec=N)",
        "minor = [[None] * len(columns) for _ in rows]",
        "for k, (block, r, c) in enumerate(columns):",
        "    params = []",
        "    for n, B in enumerate(point):",
        "        P = [[e**powers[n] * x for x in row] for row in mat(B)]",
        "        if n == block:  # move this entry by d: eps^m d in the curve's coordinates, d in the native ones",
        "            P[r][c] = P[r][c] + (dd if native else e**powers[n] * dd)",
        "        params.append(P)",
        "    for b in sorted({row[0] for row in rows}):",
        "        X = [[e**input_power * x for x in row] for row in mat(bank[b])]",
        "        for l, (heads, normalizer, ffn, activation) in enumerate(zip(layers, normalizers, ffns, activations)):",
        "            integers = exact_scores(heads, bank[b]) if l == 0 and integer_base else None",
        "            X = attention(X, heads, normalizer, params, integers)",
        "            if ffn:  # the layer's feed-forward block, after its attention",
        "                X = feed_forward(X, ffn, activation, params)",
        "        for n, (bb, i, j) in enumerate(rows):",
        "            if bb == b:",
        "                minor[n][k] = S(d_coefficients(X[i][j])).add_bigoh(N)",
        "",
        "# least-valuation full pivoting over GF(p)[[t]] (t = eps), entries known mod t^N",
        "left_rows, left_cols, found = list(range(len(rows))), list(range(len(columns))), []",
        "while left_rows and left_cols:",
        "    v, i, j = min((minor[i][j].valuation(), i, j) for i in left_rows for j in left_cols)",
        "    if v >= N:",
        "        break",
        "    found.append(v)",
        "    for i2 in left_rows:",
        "        if i2 != i:",
        "            factor = minor[i2][j] / minor[i][j]",
        "            for j2 in left_cols:",
        "                minor[i2][j2] = minor[i2][j2] - factor * minor[i][j2]",
        "    left_rows.remove(i)",
        "    left_cols.remove(j)",
        "",
        "if sorted(found) == claimed:",
        "    print('verified: the witness minor has pivot valuations %s, all below eps^%d: rank >= %d'",
        "          % (sorted(found), N, len(found)))",
        "else:",
        "    print('NOT verified: the witness minor has pivot valuations %s, the certificate claims %s'",
        "          % (sorted(found), claimed))",
        "    sys.exit(1)",
    ]
    return "\n".join(lines) + "\n"


def _m2_list(value) -> str:
    """A nested list of integers as Macaulay2 list syntax."""
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(_m2_list(v) for v in value) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(int(value))


def _m2(data: dict, claim: str) -> str:
    lines = [
        "-- Re-check of a symattn certificate in Macaulay2, written by `symattn verify FILE --export m2`.",
        f"-- The certificate claims ({claim}): the minor of the Jacobian series J(eps) below has pivot",
        "-- valuations `claimed` under least-valuation pivoting, all below eps^N, hence its rank mod (p, eps^N).",
        "-- Run: M2 --script THIS_FILE",
        f"p = {data['p']};",
        f"N = {data['N']};",
        f"native = {_m2_list(data['native'])}; -- derivatives in the native parameters (a spectrum), else the curve's",
        f"causal = {_m2_list(data['causal'])};",
        f"residual = {_m2_list(data['residual'])};",
        f"inputPower = {data['input_power']}; -- the inputs are eps^inputPower X",
        f"integerBase = {data['integer_base']}; -- layer 1 at integer scores: e sent to this residue (0: no)",
        f"blockPowers = {_m2_list(data['powers'])}; -- block n is eps^(blockPowers#n) times its entry in basePoint",
        f"basePoint = {_m2_list(data['point'])};",
        f"layers = {_m2_list(data['layers'])}; -- per layer, per head: the indices of its Q, K, V (bQ, bK, bV)",
        f"normalizers = {_m2_list(data['normalizers'])}; -- per layer: lightning, polynomial, Taylor residues",
        f"ffns = {_m2_list(data['ffns'])}; -- per layer: the indices of Win, Wout (bin, bout), or {{}} without one",
        f"activations = {_m2_list(data['activations'])}; -- per layer: polynomial, Taylor residues of s, or {{}}",
        f"bank = {_m2_list(data['bank'])};",
        f"witnessRows = {_m2_list(data['rows'])}; -- (input, output row, output token)",
        f"witnessColumns = {_m2_list(data['columns'])}; -- (block, row, column)",
        f"claimed = {_m2_list(data['claimed'])};",
        "",
        "kk = ZZ/p;",
        "R = kk[eps, d];",
        "epsR = R_0; dR = R_1;",
        "Jet = R / ideal(epsR^N, dR^2); -- a value and one direction d, series mod eps^N",
        "epsJ = Jet_0; dJ = Jet_1;",
        "matMul = (A, B) -> apply(#A, i -> apply(#(B#0), j -> sum(#B, k -> (A#i#k) * (B#k#j))));",
        "matTranspose = A -> apply(#(A#0), j -> apply(#A, i -> A#i#j));",
        "constantTerm = x -> lift(sub(lift(x, R), {epsR => 0, dR => 0}), kk);",
        "inverseOf = u -> (",
        "    -- u = u0 + n, n in (eps, d) and (eps, d)^(N+1) = 0: 1/u = u0^-1 sum_k (-n/u0)^k",
        "    u0 := constantTerm u;",
        "    if u0 == 0 then (print \"NOT verified: a column sum of s(A) is 0 mod p at eps = 0\"; exit 1);",
        "    x := -(u - promote(u0, Jet)) * promote(1/u0, Jet);",
        "    total := 1_Jet; power := 1_Jet;",
        "    for k from 1 to N + 1 do (power = power * x; total = total + power);",
        "    total * promote(1/u0, Jet));",
        "sOf = (a, taylor, polynomial, what) -> (",
        "    if not polynomial and constantTerm a != 0 then (print(\"NOT verified: \" | what | \" is nonzero at eps = 0\"); exit 1);",
        "    value := 0_Jet;",
        "    for n from 0 to #taylor - 1 do value = value * a + (taylor#(#taylor - 1 - n))_Jet; -- Horner",
        "    value);",
        "-- layer 1 at integer scores: m_jk = <K x_j, Q x_k> over the integers, from the point and the input",
        "exactScores = (heads, X) -> apply(heads, h -> (",
        "    QX := matMul(basePoint#(h#0), X); KX := matMul(basePoint#(h#1), X);",
        "    m := matMul(matTranspose KX, QX);",
        "    for row in m do for v in row do if 2 * abs v >= p then (print \"NOT verified: a layer-1 score is not below p/2\"; exit 1);",
        "    m));",
        "-- exp(a) = e^m exp(a - m), e sent to integerBase (a ring homomorphism: e is transcendental)",
        "sAtInteger = (a, m, taylor) -> (",
        "    if constantTerm a != m_kk then (print(\"NOT verified: a layer-1 score is not its exact integer score \" | toString m | \" at eps = 0\"); exit 1);",
        "    power := if m >= 0 then (integerBase_kk)^m else (1/(integerBase_kk))^(-m);",
        "    promote(power, Jet) * sOf(a - m_Jet, taylor, false, \"a layer-1 score less its integer\"));",
        "plusBias = (M, b) -> apply(#M, i -> apply(M#i, x -> x + b#i#0)); -- M + b 1^T: b added to every token",
        "attention = (X, heads, normalizer, params, integers) -> (",
        "    t := #(X#0); out := null;",
        "    for hi from 0 to #heads - 1 do (",
        "        h := heads#hi;",
        "        QX := matMul(params#(h#0), X); KX := matMul(params#(h#1), X); VX := matMul(params#(h#2), X);",
        "        if #h == 6 then ( -- biases: Q x + b_Q, K x + b_K, V x + b_V for every token x",
        "            QX = plusBias(QX, params#(h#3)); KX = plusBias(KX, params#(h#4)); VX = plusBias(VX, params#(h#5)));",
        "        A := matMul(matTranspose KX, QX); -- A_jk = <K x_j + b_K, Q x_k + b_Q>",
        "        S := if normalizer#0 == 1 then",
        "            apply(t, j -> apply(t, m -> if not causal or j <= m then A#j#m else 0_Jet))",
        "        else (",
        "            s := apply(t, j -> apply(t, m -> if not causal or j <= m then (",
        "                if integers === null then sOf(A#j#m, normalizer#2, normalizer#1 == 1, \"a score\")",
        "                else sAtInteger(A#j#m, integers#hi#j#m, normalizer#2)) else 0_Jet));",
        "            sums := apply(t, m -> inverseOf sum(t, j -> s#j#m));",
        "            apply(t, j -> apply(t, m -> (s#j#m) * (sums#m)))); -- each query's column normalized",
        "        head := matMul(VX, S);",
        "        out = if out === null then head else apply(#out, i -> apply(#(out#0), j -> out#i#j + head#i#j)));",
        "    if residual then out = apply(#out, i -> apply(#(out#0), j -> out#i#j + X#i#j));",
        "    out);",
        "-- W_out s(W_in x + b_in) + b_out for every token x (plus x with a residual stream)",
        "feedForward = (X, blocks, activation, params) -> (",
        "    pre := matMul(params#(blocks#0), X);",
        "    if #blocks == 4 then pre = plusBias(pre, params#(blocks#2));",
        "    hidden := apply(pre, row -> apply(row, a -> sOf(a, activation#1, activation#0 == 1,",
        "        \"the feed-forward block's argument\")));",
        "    out := matMul(params#(blocks#1), hidden);",
        "    if #blocks == 4 then out = plusBias(out, params#(blocks#3));",
        "    if residual then out = apply(#out, i -> apply(#(out#0), j -> out#i#j + X#i#j));",
        "    out);",
        "-- the coefficient of d, as the list of its coefficients of eps^0 .. eps^(N-1)",
        "dCoefficients = x -> (f := lift(x, R); apply(N, n -> coefficient(epsR^n * dR, f)));",
        "cells = new MutableHashTable;",
        "for k from 0 to #witnessColumns - 1 do (",
        "    col := witnessColumns#k;",
        "    params := apply(#basePoint, n -> (",
        "        P := apply(basePoint#n, row -> apply(row, x -> epsJ^(blockPowers#n) * x_Jet));",
        "        if n == col#0 then P = apply(#P, r -> apply(#(P#0), c -> if r == col#1 and c == col#2 then",
        "            P#r#c + (if native then dJ else epsJ^(blockPowers#n) * dJ) else P#r#c));",
        "        P));",
        "    inputs := unique apply(witnessRows, w -> w#0);",
        "    for b in inputs do (",
        "        X := apply(bank#b, row -> apply(row, x -> epsJ^inputPower * x_Jet));",
        "        for l from 0 to #layers - 1 do (",
        "            X = attention(X, layers#l, normalizers#l, params,",
        "                if l == 0 and integerBase != 0 then exactScores(layers#l, bank#b) else null);",
        "            if #(ffns#l) > 0 then X = feedForward(X, ffns#l, activations#l, params)); -- after the attention",
        "        for n from 0 to #witnessRows - 1 do if (witnessRows#n)#0 == b then",
        "            cells#(n, k) = dCoefficients(X#((witnessRows#n)#1)#((witnessRows#n)#2))));",
        "-- least-valuation full pivoting over GF(p)[[t]]: an entry is its list of coefficients of t^0 .. t^(N-1)",
        "lowestDegree = f -> (v := N; for n from 0 to N - 1 do if v == N and f#n != 0 then v = n; v);",
        "seriesTimes = (f, g) -> apply(N, n -> sum(n + 1, m -> (f#m) * (g#(n - m))));",
        "seriesInverse = f -> (g := new MutableList from N:0_kk; g#0 = 1/(f#0);",
        "    for n from 1 to N - 1 do g#n = -(g#0) * sum(n, m -> (f#(n - m)) * (g#m)); toList g);",
        "seriesShift = (f, v) -> apply(N, n -> if n + v < N then f#(n + v) else 0_kk);",
        "leftRows = toList(0 .. #witnessRows - 1); leftCols = toList(0 .. #witnessColumns - 1); found = {};",
        "while #leftRows > 0 and #leftCols > 0 do (",
        "    best := (N, -1, -1);",
        "    for i in leftRows do for j in leftCols do (v := lowestDegree(cells#(i, j)); if v < best#0 then best = (v, i, j));",
        "    if best#0 >= N then break;",
        "    (v, i, j) := best; found = append(found, v);",
        "    -- the multiplier entry / pivot, known mod t^(N - v); it meets entries of valuation >= v",
        "    inv := seriesInverse seriesShift(cells#(i, j), v);",
        "    for i2 in leftRows do if i2 != i then (",
        "        multiplier := seriesTimes(seriesShift(cells#(i2, j), v), inv);",
        "        for j2 in leftCols do cells#(i2, j2) = apply(N, n -> (cells#(i2, j2))#n - (seriesTimes(multiplier, cells#(i, j2)))#n));",
        "    leftRows = delete(i, leftRows); leftCols = delete(j, leftCols));",
        "(if sort found == claimed then (",
        "    print(\"verified: the witness minor has pivot valuations \" | toString sort found | \", all below eps^\" | toString N",
        "          | \": rank >= \" | toString(#found)))",
        " else (",
        "    print(\"NOT verified: the witness minor has pivot valuations \" | toString sort found",
        "          | \", the certificate claims \" | toString claimed);",
        "    exit 1));",
    ]
    return "\n".join(lines) + "\n"
