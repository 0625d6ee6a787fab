"""Grids of architectures: values, ranges and lists per field, a TOML file, and the points they span.

A grid gives each architecture field one value, a list or a range:

==================  ==========================================  ==============================
field               one value                                   several values
==================  ==========================================  ==============================
``layers``          ``3``                                       ``1..4``, ``1,2,4``
``width``           ``2`` (every ``d_i``)                       ``2..6``, ``2,4``
``widths``          ``2,3,2`` (``d_0, ..., d_l``)               ``2,3,2;3,3,3`` (``;`` between)
``rank``            ``1`` (every ``a_i``)                       ``1..2``, ``1,2``
``ranks``           ``1,2`` (``a_1, ..., a_l``)                 ``1,1;2,1``
``tokens``          ``3``                                       ``3..5``
``normalizer``      ``softmax``, ``'1 + x**2'``                 ``softmax,cosh``
others              as :class:`~symattn.model.Architecture`     lists; booleans ``yes,no``
                    takes them (``heads``, ``causal``, ...)
==================  ==========================================  ==============================

User text is data: integers are read with ``int``, normalizers by
:func:`symattn.normalizers.as_normalizer` (the package's one safe parser),
nothing else is evaluated.  The points are the Cartesian product of the
fields in the order above.  A point that does not make an architecture
(widths and layers that disagree, a residual stream between different
widths, ...) is *skipped with its reason*,
not an error; text that cannot be read at all (a word for a number, a
normalizer that does not parse or is not positive) is a :class:`GridError`.

Examples
--------
>>> grid = read_grid({"layers": "1..2", "widths": "2,2;2,3,2", "rank": "1..2"})
>>> points, skipped = grid_points(grid)
>>> len(points), len(skipped)
(4, 4)
>>> points[0]
{'layers': 1, 'widths': (2, 2), 'rank': 1}
>>> skipped[0].reason
'layers = 1 disagrees with widths 2,3,2 (2 layers)'
"""

from __future__ import annotations

import inspect
import itertools
import math
import re
import tomllib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ShapeError, SymattnError
from ..limits import read_input_file

if TYPE_CHECKING:  # the model loads sympy: imported where an Architecture is built
    from ..model import Architecture

__all__ = ["GridError", "Skip", "read_grid", "read_grid_file", "grid_points", "build_architecture",
           "point_label", "GRID_FIELDS", "MAX_KEY_PARTS", "longest_dotted_key"]


class GridError(SymattnError):
    """Grid text that cannot be read: names the field, the text and what is accepted.

    Examples
    --------
    >>> issubclass(GridError, SymattnError)
    True
    """


#: The fields a grid knows, in the order the points vary (the last fastest), and the kind of value.
GRID_FIELDS = {
    "layers": "int", "width": "int", "widths": "int list", "rank": "int", "ranks": "int list",
    "tokens": "int", "normalizer": "normalizer", "assume_positive": "bool",
    # a feed-forward block after each attention (symattn.model.feedforward): hidden units and activation
    "ffn": "int", "activation": "normalizer",
}
_ALIASES = {"score_ranks": "ranks", "score_rank": "rank", "normalizers": "normalizer"}
_BOOL_WORDS = {"yes": True, "true": True, "1": True, "on": True, "no": False, "false": False, "0": False, "off": False}
#: The most values one field lists, and the most points a grid has: each point is built and checked
#: before any work, and each task costs at least a second, so a grid past these is a typo.
MAX_FIELD_VALUES = 1_000
MAX_GRID_POINTS = 10_000
#: The largest integer a field takes (sizes; each analysis has its own, much lower, limits).
MAX_FIELD_INTEGER = 10**9
#: Architecture's own keyword arguments handled by the builder (the others pass through unchanged).
_BUILT = {"widths", "score_ranks", "tokens", "normalizer", "extra"}  # extra: built from ffn and activation


def _extra_fields() -> dict[str, inspect.Parameter]:
    """Keyword arguments of :class:`Architecture` beyond widths, ranks, tokens and normalizer (variants)."""
    from ..model import Architecture  # sympy: loaded when a grid is read, not when the CLI starts

    return {name: p for name, p in inspect.signature(Architecture).parameters.items()
            if name not in _BUILT and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _kind(field: str) -> str:
    if field in GRID_FIELDS:
        return GRID_FIELDS[field]
    parameter = _extra_fields()[field]
    return "bool" if isinstance(parameter.default, bool) else "int or list"


def _accepted_fields() -> str:
    return ", ".join([*GRID_FIELDS, *_extra_fields()])


def _field_name(name) -> str:
    if not isinstance(name, str):
        raise GridError(f"a grid field is a name such as 'layers', got {name!r}")
    field = name.strip().lstrip("-").replace("-", "_").lower()
    field = _ALIASES.get(field, field)
    if field not in GRID_FIELDS and field not in _extra_fields():
        raise GridError(f"unknown grid field {name!r}; accepted: {_accepted_fields()}")
    return field


def _split_top_level(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside parentheses (``exp(x) + atan2(x, 1)`` stays whole)."""
    parts, depth, current = [], 0, []
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == separator and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts]


def _integer(field: str, text) -> int:
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise GridError(f"{field} takes integers, got {text!r}")
    if isinstance(text, str) and len(text.strip()) > 12:  # before int(): thousands of digits take it long
        raise GridError(f"{field}: {text[:20]!r}... is past the largest value {MAX_FIELD_INTEGER}")
    try:
        value = int(text)
    except ValueError:
        raise GridError(f"{field}: {text!r} is not an integer; write a value (3), a list (1,2,4) "
                        f"or a range (1..4)") from None
    if abs(value) > MAX_FIELD_INTEGER:
        raise GridError(f"{field}: {value} is past the largest value {MAX_FIELD_INTEGER}")
    return value


def _integers(field: str, text: str) -> list[int]:
    """``3``, ``1,2,4`` or ``1..4`` (both ends included)."""
    values = []
    for part in _split_top_level(text, ","):
        if ".." in part:
            low, _, high = part.partition("..")
            low, high = _integer(field, low.strip()), _integer(field, high.strip())
            if low > high:
                raise GridError(f"{field}: the range {part!r} is empty; write A..B with A <= B")
            if high - low >= MAX_FIELD_VALUES:
                raise GridError(f"{field}: the range {part!r} has {high - low + 1} values; a field lists at most "
                                f"{MAX_FIELD_VALUES}")
            values += range(low, high + 1)
        else:
            values.append(_integer(field, part))
    return values


def _boolean(field: str, value) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word not in _BOOL_WORDS:
        raise GridError(f"{field} takes yes or no (true or false), got {value!r}")
    return _BOOL_WORDS[word]


def _values(field: str, value) -> list:
    """The list of values of one field from its text, number, boolean or list."""
    kind = _kind(field)
    if kind == "int list":  # each value is itself a list: '2,3,2;3,3,3', [2, 3, 2] or [[2, 3, 2], "3,3,3"]
        if isinstance(value, str):
            return [_int_list(field, part) for part in _split_top_level(value, ";")]
        if isinstance(value, (list, tuple)) and value and all(_is_int(v) for v in value):
            return [_int_list(field, value)]
        if isinstance(value, (list, tuple)):
            return [_int_list(field, item) for item in value]
        raise GridError(f"{field} takes one integer per layer, such as 2,3,2, got {value!r}")
    if isinstance(value, (list, tuple, range)):  # alternatives: values, texts, or (TOML) one list per layer
        values = []
        for item in value:
            if isinstance(item, (list, tuple)):
                if kind != "int or list" or not item:  # a list per layer is for a variant (heads), never empty
                    raise GridError(f"{field} takes values or ranges, not a list of lists, got {value!r:.80}")
                values.append(tuple(_integer(field, v) for v in item))
            else:
                values += _values(field, item)
            if len(values) > MAX_FIELD_VALUES:
                raise GridError(f"{field} lists more than {MAX_FIELD_VALUES} values")
        return values
    if kind == "bool":
        if isinstance(value, str):
            return [_boolean(field, part) for part in _split_top_level(value, ",")]
        return [_boolean(field, value)]
    if kind == "normalizer":
        if not isinstance(value, str):
            raise GridError(f"{field} takes names or expressions in x, got {value!r}")
        names = [part for part in _split_top_level(value, ",") if part]
        if not names:
            raise GridError(f"{field} is empty; give a preset (softmax, cosh, ...; tanh, sigmoid, ... for the "
                            "activation) or an expression in x")
        return names
    if _is_int(value):
        return [_integer(field, value)]
    if isinstance(value, str):
        return _integers(field, value)
    raise GridError(f"{field} takes integers, a list or a range A..B, got {value!r}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_list(field: str, value) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(_integer(field, v) for v in value)
    parts = _split_top_level(str(value), ",")
    if any(".." in part for part in parts):
        raise GridError(f"{field} lists one value per layer ({value!r}); separate several lists with ';', "
                        f"as in 2,3,2;3,3,3")
    return tuple(_integer(field, part) for part in parts)


def read_grid(fields: Mapping[str, Any]) -> dict[str, list]:
    """The values of each field of a grid, read from text, numbers, booleans or lists.

    Parameters
    ----------
    fields : mapping
        Field name (``layers``, ``width``, ``widths``, ``rank``, ``ranks``,
        ``tokens``, ``normalizer``, ``assume_positive``, or a variant that
        :class:`~symattn.model.Architecture` takes) to a value, a list, or
        text: ``3``, ``1,2,4``, ``1..4``; lists of widths or ranks are
        separated by ``;``.  ``None`` leaves a field out.

    Returns
    -------
    dict
        Field to the list of its values, in the order of :data:`GRID_FIELDS`.

    Raises
    ------
    GridError
        For an unknown field or text that is not a value, a list or a range.

    Examples
    --------
    >>> read_grid({"layers": "1..3", "normalizer": "softmax, 1 + x**2", "widths": "2,3,2;2,2,2"})
    {'layers': [1, 2, 3], 'widths': [(2, 3, 2), (2, 2, 2)], 'normalizer': ['softmax', '1 + x**2']}
    >>> read_grid({"layers": "1..x"})
    Traceback (most recent call last):
    ...
    symattn.sweep.grid.GridError: layers: 'x' is not an integer; write a value (3), a list (1,2,4) or a range (1..4)
    >>> read_grid({"normalizer": "softmax, __import__('os')"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symattn.sweep.grid.GridError: normalizer "__import__('os')": ...
    """
    if not isinstance(fields, Mapping):
        raise GridError(f"a grid is a mapping of fields to values, such as {{'layers': '1..3'}}, got {fields!r}")
    read = {}
    for name, value in fields.items():
        if value is None:
            continue
        field = _field_name(name)
        if field in read:
            raise GridError(f"the grid gives {field} twice")
        values = _values(field, value)
        if not values:
            raise GridError(f"{field} has no values")
        read[field] = list(dict.fromkeys(values))  # each value once, in the order given
    for one, many in (("width", "widths"), ("rank", "ranks")):
        if one in read and many in read:
            raise GridError(f"give {one} (the same for every layer) or {many} (one per layer), not both")
    from ..normalizers import as_normalizer

    for name in read.get("normalizer", []):  # read once here: text that is no normalizer is an error, not a skip
        try:
            as_normalizer(name, assume_positive=any(read.get("assume_positive", [False])))
        except SymattnError as err:
            raise GridError(f"normalizer {name!r}: {' '.join(str(err).split())}") from None
    if read.get("activation"):
        from ..model.feedforward import Activation

        for name in read["activation"]:
            try:
                Activation(name)
            except SymattnError as err:
                raise GridError(f"activation {name!r}: {' '.join(str(err).split())}") from None
    order = [*GRID_FIELDS, *_extra_fields()]
    return {field: read[field] for field in order if field in read}


#: The most parts a key of a grid file has (``grid.layers`` has 2): Python's TOML reader takes time
#: quadratic in the parts of one dotted key (100,000 parts in 200 KB: 44 s, then gigabytes).
MAX_KEY_PARTS = 16

# One token of TOML text, for the scan before parsing: strings (multi-line first), a comment, a run of bare-key
# characters, a run of blanks, a dot, a run of other characters, or the quote of an unterminated string.  Each alternative is possessive and starts with
# its own character, so the scan is linear in the text.
_TOML_TOKEN = re.compile(r'''
    (?P<multiline>"""(?:[^"\\]|\\[\s\S]|"(?!""))*+"{3,5}|\'\'\'(?:[^\']|\'(?!\'\'))*+\'{3,5})
  | (?P<open>"""|\'\'\')
  | (?P<string>"(?:[^"\\\n]|\\.)*+"|\'[^\'\n]*+\')
  | (?P<comment>\#[^\n]*+)
  | (?P<bare>[A-Za-z0-9_-]++)
  | (?P<blank>[ \t]++)
  | (?P<dot>\.)
  | (?P<other>[^A-Za-z0-9_\-."\'\# \t]++|["\'])
''', re.VERBOSE)


def longest_dotted_key(text: str) -> tuple[int, int]:
    """``(parts, line)`` of the longest chain of key parts joined by dots in TOML text, read in one linear scan.

    A part is a bare key or a quoted string on one line; blanks may surround
    the dots; anything else (``=``, ``[``, a newline, a comment) ends the
    chain.  A number such as ``1.5`` counts as two parts, and text inside
    strings as none.  An unterminated multi-line string ends the scan (the
    TOML reader stops there too).

    Examples
    --------
    >>> longest_dotted_key('[grid]\\nlayers = "1..3"\\nspectrum.bank = 1.5  # a.b.c.d')
    (2, 3)
    >>> longest_dotted_key('"a" . b.\\'c\\'.d = 1')
    (4, 1)
    >>> longest_dotted_key(".".join(["a"] * 100000) + " = 1")
    (100000, 1)
    """
    longest, where, parts, state, line = 0, 0, 0, "none", 1
    for token in _TOML_TOKEN.finditer(text):
        kind = token.lastgroup
        if kind == "blank":
            continue
        if kind in ("bare", "string"):
            parts = parts + 1 if state == "dot" else 1
            state = "part"
            if parts > longest:
                longest, where = parts, line
        elif kind == "dot" and state == "part":
            state = "dot"
        elif kind == "open":  # an unterminated multi-line string: the rest of the file is in it
            break
        else:
            parts, state = 0, "none"
        line += token.group().count("\n") if kind in ("multiline", "other") else 0
    return longest, where


def read_grid_file(path) -> dict:
    """A sweep described in a TOML file: its grid, analyses and options.

    The file has a ``[grid]`` table (fields as in :func:`read_grid`: TOML
    integers, booleans, lists, or text such as ``"1..4"``) and optionally
    ``analyses = [...]`` and tables of options per analysis (``[options]``
    for all, ``[spectrum]``, ``[observe]`` with ``events``, ``[check]`` with
    ``claims``).

    Returns
    -------
    dict
        ``{"grid": {...}, "analyses": [...] or None, "options": {...}}``.

    Raises
    ------
    GridError
        When the file cannot be read or is not TOML of this form.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "grid.toml"
    >>> _ = path.write_text('''
    ... analyses = ["dimension", "observe"]
    ... [grid]
    ... layers = "1..2"
    ... width = [2, 3]
    ... normalizer = ["softmax", "cosh"]
    ... [observe]
    ... events = [["scores:1"], ["values:1", "bias"]]
    ... ''')
    >>> spec = read_grid_file(path)
    >>> spec["grid"]["width"], spec["analyses"], spec["options"]["observe"]["events"]
    ([2, 3], ['dimension', 'observe'], [['scores:1'], ['values:1', 'bias']])
    """
    try:
        text = read_input_file(path, f"the grid file {path}")
    except SymattnError as err:
        raise GridError(str(err)) from None
    parts, line = longest_dotted_key(text)  # measured before the TOML reader sees it
    if parts > MAX_KEY_PARTS:
        raise GridError(f"the grid file {path} has a dotted key of {parts} parts on line {line}; a grid file's "
                        f"keys have at most {MAX_KEY_PARTS}, such as [grid] then layers = \"1..3\", or "
                        f"grid.layers = \"1..3\"")
    try:
        data = tomllib.loads(text)
    except ValueError as err:  # TOMLDecodeError, and an integer past Python's 4300 digits
        if "integer string conversion" in str(err):
            raise GridError(f"the grid file {path} has an integer of more than 4300 digits; a field takes "
                            f"integers up to {MAX_FIELD_INTEGER}") from None
        raise GridError(f"the grid file {path} is not valid TOML: {' '.join(str(err).split())[:300]}") from None
    except RecursionError:
        raise GridError(f"the grid file {path} nests its lists or tables too deeply to be a grid") from None
    grid = data.pop("grid", None)
    if not isinstance(grid, dict) or not grid:
        raise GridError(f"the grid file {path} needs a [grid] table, such as [grid] layers = \"1..3\"")
    analyses = data.pop("analyses", None)
    if analyses is not None and not (isinstance(analyses, list) and all(isinstance(a, str) for a in analyses)):
        raise GridError(f"the grid file {path}: analyses must be a list of names, such as [\"dimension\"]")
    options = {}
    for name, table in data.items():
        if not isinstance(table, dict):
            raise GridError(f"the grid file {path}: {name!r} must be a table ([{name}]) of options")
        options[name] = table
    read_grid(grid)  # every field read now, before any work
    return {"grid": grid, "analyses": analyses, "options": options}


@dataclass(frozen=True)
class Skip:
    """A grid point (or one analysis of it) that is not computed, and why.

    Examples
    --------
    >>> Skip({"layers": 1, "rank": 3}, None, "rank too large").to_json()
    {'point': {'layers': 1, 'rank': 3}, 'analysis': None, 'reason': 'rank too large'}
    """

    point: dict
    analysis: str | None
    reason: str

    def to_json(self) -> dict:
        return {"point": dict(self.point), "analysis": self.analysis, "reason": self.reason}


def point_label(point: Mapping) -> str:
    """A short text for a point, e.g. ``layers=2 width=3 normalizer=cosh``.

    Examples
    --------
    >>> point_label({"layers": 2, "widths": (2, 3, 2), "normalizer": "cosh"})
    'layers=2 widths=2,3,2 normalizer=cosh'
    """
    def text(value):
        return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return " ".join(f"{field}={text(value)}" for field, value in point.items())


def build_architecture(point: Mapping) -> "Architecture":
    """The Architecture of one grid point (fields as in :func:`read_grid`, one value each).

    Missing fields take the defaults of :meth:`Architecture.uniform` (3
    layers, width 2, rank 1, 3 tokens, softmax).

    Raises
    ------
    SymattnError
        When the point is not an architecture (its message is the reason the point is skipped).

    Examples
    --------
    >>> build_architecture({"layers": 2, "width": 3, "normalizer": "cosh"})
    Architecture(widths=[3, 3, 3], score_ranks=[1, 1], tokens=3, normalizer=['cosh', 'cosh'])
    >>> build_architecture({"layers": 3, "widths": (2, 3, 2)})
    Traceback (most recent call last):
    ...
    symattn.errors.ShapeError: layers = 3 disagrees with widths 2,3,2 (2 layers)
    """
    from ..model import Architecture
    from ..normalizers import as_normalizer

    widths, ranks, layers = point.get("widths"), point.get("ranks"), point.get("layers")
    counts = [(f"layers = {layers}", layers)] if layers is not None else []
    if widths is not None:
        counts.append((f"widths {','.join(map(str, widths))}", len(widths) - 1))
    if ranks is not None:
        counts.append((f"ranks {','.join(map(str, ranks))}", len(ranks)))
    for (first, count), (other, other_count) in itertools.pairwise(counts):
        if count != other_count:
            raise ShapeError(f"{first} disagrees with {other} ({other_count} layer{'s' * (other_count != 1)})")
    defaults = inspect.signature(Architecture.uniform).parameters
    layers = counts[0][1] if counts else defaults["layers"].default
    width = point.get("width", defaults["width"].default)
    rank = point.get("rank", defaults["rank"].default)
    widths = list(widths) if widths is not None else [width] * (layers + 1)
    ranks = list(ranks) if ranks is not None else [rank] * layers
    if layers < 1:
        raise ShapeError(f"layers must be a positive integer, got {layers}")
    normalizer = as_normalizer(point.get("normalizer", defaults["normalizer"].default),
                               assume_positive=bool(point.get("assume_positive", False)))
    extras = {field: value for field, value in point.items() if field in _extra_fields()}
    if point.get("ffn") is not None:
        from ..model import feed_forward_block

        extras["extra"] = feed_forward_block(point["ffn"], point.get("activation", "tanh"),
                                             residual=bool(extras.get("residual")), bias=bool(extras.get("bias")))
    elif point.get("activation") not in (None, "tanh"):
        raise ShapeError(f"activation {point['activation']} is the activation of a feed-forward block: give ffn too")
    arch = Architecture(widths, ranks, tokens=point.get("tokens", defaults["tokens"].default),
                        normalizer=normalizer, **extras)
    return arch  # the model decides what an architecture is: a point every command computes is computed


def grid_points(grid: Mapping[str, list]) -> tuple[list[dict], list[Skip]]:
    """The points of a grid that make an architecture, and the skipped ones with their reasons.

    Parameters
    ----------
    grid : mapping
        Field to its list of values, as :func:`read_grid` returns.

    Returns
    -------
    points : list of dict
        One value per field, in grid order.
    skipped : list of Skip

    Examples
    --------
    >>> points, skipped = grid_points({"layers": [1], "widths": [(2, 2), (2, 3, 2)]})
    >>> points, [s.reason for s in skipped]
    ([{'layers': 1, 'widths': (2, 2)}], ['layers = 1 disagrees with widths 2,3,2 (2 layers)'])
    """
    fields = list(grid)
    count = math.prod(len(grid[field]) for field in fields)
    if count > MAX_GRID_POINTS:
        sizes = " x ".join(f"{len(grid[field])} {field}" for field in fields if len(grid[field]) > 1)
        raise GridError(f"the grid has {count} points ({sizes}); a sweep takes at most {MAX_GRID_POINTS}: "
                        f"split it into several sweeps (the same --out reuses what is done)")
    points, skipped = [], []
    for values in itertools.product(*(grid[field] for field in fields)):
        point = dict(zip(fields, values))
        try:
            build_architecture(point)
        except SymattnError as err:
            skipped.append(Skip(point, None, " ".join(str(err).split())))
            continue
        points.append(point)
    return points, skipped
