"""The bad-input matrix, derived from the operations' declarations.

Every declared operation on arrays (kinds ``linalg`` and ``elementwise``) × each
bad input of :data:`INPUTS` has one documented outcome, the same on every
backend. It comes from three places, in this order:

1. the operation's declared *deviation* for that input (``bad_input=`` of
   :func:`~xlinalg._lib._declare.declare`), where it has one;
2. xlinalg's own rules, the same for every operation: two libraries, lists,
   masked arrays, ``numpy.matrix``, read-only arrays, float16 under the dtype
   rule ``"linalg"``, and the shape rules of its argument kinds (a ``square``
   argument of rank 1 raises, naming it);
3. otherwise, the operation's NumPy reference, in the dtype of its rule: the
   result must be NumPy's (shapes, dtype, values, NaN where NumPy has NaN).

Where (3) applies but NumPy itself raises on the input, the outcome must be
declared: ``tests/ops/test_bad_input.py`` fails naming the cell until it is. The
tests run :data:`SPEC` on every backend; the site renders :func:`markdown` into
``docs/bad-input-matrix.md`` when it is built.

Nothing here imports an array library but NumPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._lib._declare import NA, BadInput, Operation, Outcome, Raises, Returns, operations

__all__ = [
    "INPUTS",
    "SPEC",
    "Cell",
    "Foreign",
    "L",
    "Other",
    "ReadOnly",
    "Sub",
    "cells_for",
    "markdown",
    "spec",
    "undeclared",
]

INPUTS = {
    "non-square": "non-square matrix (3×4)",
    "rank<2": "fewer than 2 dimensions (1-D)",
    "mismatched": "mismatched shapes",
    "batch": "incompatible batch shapes",
    "singular": "exactly singular matrix",
    "singular-member": "a singular member inside a batch",
    "near-singular": "numerically singular (cond ≈ 3e16)",
    "nan": "NaN entries",
    "inf": "inf entries",
    "0x0": "0×0 matrix / empty",
    "zero-batch": "zero-size batch (0, …)",
    "int": "integer dtype",
    "bool": "bool dtype",
    "float16": "float16",
    "complex": "complex128",
    "list": "Python lists",
    "list-foreign": "a list of another library's arrays",
    "0-d": "0-d arrays",
    "mixed": "two array libraries",
    "read-only": "read-only NumPy arrays",
    "masked": "NumPy masked array",
    "np.matrix": "`numpy.matrix`",
}

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
_TH = np.pi / 6
_Q = np.array([[np.cos(_TH), -np.sin(_TH)], [np.sin(_TH), np.cos(_TH)]])
#: cond ~ 3e16 and no zero pivot
NEAR_SINGULAR = _Q @ np.diag([1.0, 1e-17]) @ _Q.T
_EYE2 = np.eye(2) * 2


# ---------------------------------------------------------------------- argument markers
@dataclass(frozen=True)
class L:
    """A Python list (host data)."""

    value: Any


@dataclass(frozen=True)
class Other:
    """An array of another library than the backend under test."""

    value: Any


@dataclass(frozen=True)
class ReadOnly:
    """A NumPy array with ``writeable=False``."""

    value: Any


@dataclass(frozen=True)
class Sub:
    """A NumPy array subclass holding `value`: ``"masked"`` (a masked array, its first
    entry masked) or ``"matrix"`` (a ``numpy.matrix``)."""

    kind: str
    value: Any


@dataclass(frozen=True)
class Foreign:
    """A Python list of the rows of `value`, each an array of a library other than
    NumPy and the backend under test (NumPy arrays in a list are host data)."""

    value: Any


def host_value(a: Any) -> np.ndarray:
    """The NumPy array an argument (or its marker) holds."""
    return np.asarray(a.value if isinstance(a, (L, Foreign, Other, ReadOnly, Sub)) else a)


@dataclass(frozen=True)
class Cell:
    """One (operation, input): its arguments, outcome, and where it applies."""

    args: tuple[Any, ...]
    outcome: Outcome
    kwargs: Mapping[str, Any] = field(default_factory=dict, compare=False)
    only: tuple[str, ...] | None = None  # backends the input exists on (else n/a)
    only_why: str = ""
    note: str = ""  # per-backend remarks for the table
    #: the result is host data (a NumPy array), not the backend's
    host: bool = False
    #: the outcome is the operation's reference (not declared, not a rule)
    derived: bool = False


# ---------------------------------------------------------------------- the rules
MIXED_RE = r"`{0}` is (a|an) .* but `{1}` is (a|an) .*xlinalg\.to\("
NOT_A_LINALG_INPUT = "elementwise: no matrix structure"
ONE_ARG = "one argument"
NO_F16 = "no float16 arrays there"
HOST_ALONE = "a list alone is host data, owned by NumPy (run on numpy)"
NUMPY_ONLY = "NumPy arrays only"
AS_REFERENCE = "as NumPy"

_MATRIX_KINDS = ("matrix", "square", "operand")


def _backends() -> tuple[str, ...]:
    from .backends import BACKEND_NAMES

    return tuple(BACKEND_NAMES)


def with_float16() -> tuple[str, ...]:
    """The backends whose library has float16 arrays (the backends say)."""
    from .backends import get_backend

    return tuple(n for n in _backends() if get_backend(n).convert.dtype_refusal("float16") is None)


def _ref(text: str = AS_REFERENCE) -> Returns:
    return Returns(text)


def _rank_message(op: Operation, name: str, kind: str) -> Raises:
    fn = op.name
    if kind == "square":
        return Raises(ValueError, rf"{fn}: `{name}` must be a square matrix .*\(at least 2 dimensions\)",
                      f"{fn}: `{name}` must be a square matrix or a stack of square matrices (at least 2 "
                      "dimensions), got …")
    return Raises(ValueError, rf"{fn}: `{name}` must be a matrix or a stack of matrices \(at least 2 dimensions\)",
                  f"{fn}: `{name}` must be a matrix or a stack of matrices (at least 2 dimensions), got …")


def _good(kind: str, n: int = 2) -> np.ndarray:
    """A valid argument of `kind` beside a first argument with `n` rows."""
    return {"any": np.ones(n), "vector": np.ones(n), "rhs": np.ones(n), "operand": np.ones(n),
            "matrix": np.eye(n), "square": np.eye(n) * 2}[kind]


def _common(op: Operation, inp: str) -> Cell | None:
    """xlinalg's rules for every operation (library, host data, subclasses, float16)."""
    linalg = op.kind == "linalg"
    two = op.arity == 2
    (n1, _k1), *rest = op.args
    n2, k2 = rest[0] if rest else ("", "")
    first = (_good(_k1) if _k1 in ("vector", "any") else _EYE2) if linalg else np.ones((2, 2))
    second = (_good(k2) if linalg else first) if two else None
    args: tuple[Any, ...]
    if inp == "mixed":
        if not two:
            return Cell((), NA(ONE_ARG))
        a = _EYE2 if linalg else np.ones(2)
        return Cell((a, Other(np.ones(2))), Raises(
            TypeError, MIXED_RE.format(n1, n2),
            f"`{n1}` is a <library> array … but `{n2}` is a <other library> array … `xlinalg.to(...)`"))
    if inp == "read-only":
        args = (ReadOnly(first), ReadOnly(second)) if two else (ReadOnly(first),)
        return Cell(args, _ref("the same result as for writeable arrays"), only=("numpy",), only_why=NUMPY_ONLY,
                    derived=True)
    if inp == "masked":  # the second argument, where there is one: no fast path skips it
        name = n2 if two else n1
        args = (first, Sub("masked", second)) if two else (Sub("masked", first),)
        return Cell(args, Raises(
            TypeError, rf"`{name}` is a NumPy masked array .* with 1 masked entry: .*`{name}\.filled\(value\)`",
            f"`{name}` is a NumPy masked array … with 1 masked entry: xlinalg has no masks … pass "
            f"`{name}.filled(value)` … or `numpy.ma.getdata({name})`"), only=("numpy",), only_why=NUMPY_ONLY)
    if inp == "np.matrix":
        args = (Sub("matrix", first), second) if two else (Sub("matrix", first),)
        return Cell(args, Raises(
            TypeError, rf"`{n1}` is a numpy\.matrix .*not an array API array.*`numpy\.asarray\({n1}\)`",
            f"`{n1}` is a numpy.matrix …, which is not an array API array …: pass `numpy.asarray({n1})`"),
            only=("numpy",), only_why=NUMPY_ONLY)
    if inp == "list-foreign":
        # another library's arrays inside a list are not host data: NumPy would convert
        # them one by one, off their library and device (a GPU array fails in it)
        args = (Foreign(first), second) if two else (Foreign(first),)
        return Cell(args, Raises(
            TypeError, rf"`{n1}` is a Python list holding .* at `{n1}\[0\]`: xlinalg converts "
                       rf"lists and tuples of numbers and NumPy arrays only.*`[\w.]+\.stack\({n1}\)`",
            f"`{n1}` is a Python list holding a <library> array … at `{n1}[0]`: xlinalg converts lists "
            f"and tuples of numbers and NumPy arrays only … e.g. `torch.stack({n1})`"))
    if inp == "list":
        if two:
            a = _EYE2 if linalg else np.array([1.0, 2.0])
            return Cell((L(a), np.array([1.0, 2.0])),
                        _ref("a result of the other argument's backend (the list follows it)"), derived=True)
        return Cell((L(np.array([[3.0, 0.0], [0.0, 4.0]])),), _ref("a NumPy result (host data only)"),
                    only=("numpy",), only_why=HOST_ALONE, host=True, derived=True)
    if inp == "float16":
        f16 = np.array([[1.0, 0.5], [0.25, 2.0]], np.float16)
        only = with_float16()
        if op.dtypes == "linalg":
            args = (f16, np.ones(2, np.float16)) if two else (f16,)
            return Cell(args, Raises(
                TypeError, rf"{op.name}: `{n1}` has dtype float16",
                f"{op.name}: `{n1}` has dtype float16, which no backend's linear algebra supports uniformly; "
                "cast it first …"), only=only, only_why=NO_F16)
        return Cell((f16, f16) if two else (f16,), _ref("float16, computed natively"), only=only,
                    only_why=NO_F16, derived=True)
    return None


def _elementwise(op: Operation, inp: str) -> Cell:
    fn = op.name
    quiet = ", no warning" if op.silent else ""
    if inp in ("non-square", "singular", "singular-member", "near-singular"):
        return Cell((), NA(NOT_A_LINALG_INPUT))
    if inp == "rank<2":
        return Cell((), NA("elementwise: any rank"))
    if op.arity == 1:
        args: dict[str, tuple[Any, ...]] = {
            "nan": (np.array([1.0, np.nan]),),
            "inf": (np.array([np.inf, -np.inf, 1e4]),),
            "0x0": (np.zeros((0, 0)),),
            "zero-batch": (np.zeros((0, 3, 3)),),
            "int": (np.array([0, 1, 2]),),
            "bool": (np.array([True, False]),),
            "complex": (np.array([0.5 - 2j, 2j]),),
            "0-d": (np.float64(0.5),),
        }
        if inp in ("mismatched", "batch"):
            return Cell((), NA(ONE_ARG))
    else:
        a = np.array([1.0, -2.0, 3.0])
        bshape = rf"{fn}: the shapes of `x1` {{0}} and `x2` {{1}} do not broadcast"
        if inp == "mismatched":
            return Cell((np.ones(3), np.ones(2)), Raises(
                ValueError, bshape.format(r"\(3,\)", r"\(2,\)"), f"{fn}: the shapes of `x1` (3,) and `x2` (2,) do not broadcast"))
        if inp == "batch":
            return Cell((np.ones((2, 3, 3)), np.ones((4, 3, 3))), Raises(
                ValueError, bshape.format(r"\(2, 3, 3\)", r"\(4, 3, 3\)"),
                f"{fn}: the shapes of `x1` (2, 3, 3) and `x2` (4, 3, 3) do not broadcast"))
        args = {
            "nan": (np.array([1.0, np.nan, 3.0]), a),
            "inf": (np.array([np.inf, -np.inf, 1.0]), a),
            "0x0": (np.zeros((0, 0)), np.zeros((0, 0))),
            "zero-batch": (np.zeros((0, 3, 3)), np.ones(3)),
            "int": (np.array([4, 5, 6]), np.array([1, 2, 3])),
            "bool": (np.array([True, True, False]), np.array([True, False, False])),
            "complex": (np.array([1 + 1j, 2j]), np.array([1j, 1 - 1j])),
            "0-d": (np.float64(2.0), a),
        }
    texts = {"nan": "NaN where NumPy has NaN" + quiet, "inf": "IEEE results (±inf, NaN), as NumPy" + quiet,
             "0-d": "a 0-d result or broadcast, as NumPy"}
    return Cell(args[inp], _ref(texts.get(inp, AS_REFERENCE)), derived=True)


def _linalg(op: Operation, inp: str) -> Cell:
    fn = op.name
    (n1, k1), *rest = op.args
    n2, k2 = rest[0] if rest else ("", "")
    two = op.arity == 2
    matrixlike = k1 in _MATRIX_KINDS

    def with2(a: Any, b: Any = None) -> tuple[Any, ...]:
        """`a` as the first argument, and a valid second one (of `a`'s rows)."""
        if not two:
            return (a,)
        if b is None:
            rows = np.shape(a)[-2] if k1 in _MATRIX_KINDS and np.ndim(a) >= 2 else (np.shape(a)[-1] if np.ndim(a) else 2)
            b = _good(k2, rows)
        return (a, b)

    if inp in ("singular", "singular-member", "near-singular"):
        if k1 == "operand":
            return Cell((), NA(f"{fn} inverts nothing"))
        if not matrixlike:
            return Cell((), NA(NOT_A_LINALG_INPUT))
        a = {"singular": SINGULAR, "singular-member": np.stack([np.eye(2), SINGULAR, _EYE2]) if two
             else np.stack([np.eye(2), SINGULAR]), "near-singular": NEAR_SINGULAR}[inp]
        return Cell(with2(a), _ref("as NumPy, no error"), derived=True)
    if inp in ("mismatched", "batch") and not two:
        return Cell((), NA(ONE_ARG))
    if inp == "batch":
        if matrixlike and k2 in (*_MATRIX_KINDS, "rhs"):
            return Cell((np.ones((2, 3, 3)), np.ones((3, 3, 1))), Raises(
                ValueError, rf"{fn}: the batch shapes of `{n1}` \(2,\) and `{n2}` \(3,\) do not broadcast",
                f"{fn}: the batch shapes of `{n1}` (2,) and `{n2}` (3,) do not broadcast"))
        return Cell((np.ones((2, 3)), np.ones((4, 3))), _ref(), derived=True)
    if inp == "mismatched":
        return Cell(with2(np.eye(3) * 2 if matrixlike else np.ones(3), np.ones(2)), _ref(), derived=True)
    if inp in ("rank<2", "0-d"):
        a = np.ones(3) if inp == "rank<2" else np.float64(2.0)
        if k1 in ("matrix", "square"):
            return Cell(with2(a, _good(k2, 3) if two else None), _rank_message(op, n1, k1))
        if inp == "rank<2":
            return Cell(with2(np.array([1.0, 2.0, 3.0]), np.ones(3)), _ref("1-D operands, as NumPy"), derived=True)
        return Cell(with2(a, np.ones(2)), _ref(), derived=True)
    if inp == "non-square":
        if k1 == "square":
            return Cell(with2(np.ones((3, 4)), _good(k2, 3) if two else None), Raises(
                ValueError, rf"{fn}: `{n1}` must be a square matrix or a stack of square matrices, got shape \(3, 4\)",
                f"{fn}: `{n1}` must be a square matrix or a stack of square matrices, got shape (3, 4) …"))
        if not matrixlike:
            return Cell((), NA(NOT_A_LINALG_INPUT))
        return Cell(with2(np.arange(12.0).reshape(3, 4)), _ref("valid (any M×N): as NumPy"), derived=True)
    nan = np.array([[1.0, np.nan], [0.0, 1.0]])
    inf = np.array([[1.0, np.inf], [0.0, 1.0]])
    empty2 = {"rhs": np.zeros(0), "vector": np.zeros(0), "any": np.zeros(0)}.get(k2, np.zeros((0, 0)))
    if matrixlike:
        args = {
            "nan": with2(nan),
            "inf": with2(inf),
            "0x0": (np.zeros((0, 0)), empty2) if two else (np.zeros((0, 0)),),
            "zero-batch": (np.zeros((0, 3, 3)), np.zeros((0, 3, 2))) if two
            else (np.zeros((0, 3, 3)) if k1 == "square" else np.zeros((0, 3, 2)),),
            "int": with2(np.array([[2, 1], [1, 4]]), np.array([2, 2])) if two else (np.array([[3, 0], [1, 4]]),),
            "bool": with2(np.eye(2, dtype=bool), np.ones(2, dtype=bool)) if two
            else (np.array([[True, False], [True, True]]),),
            "complex": with2(np.array([[2 + 1j, 0], [1j, 1]]), np.array([1, 1j])) if two
            else (np.array([[1 + 1j, 2], [0, 1j], [1, 1]]) if k1 == "matrix" else np.array([[2 + 1j, 0], [1j, 1]]),),
        }
    else:  # vectors
        args = {
            "nan": with2(np.array([1.0, np.nan, 3.0]), np.ones(3)),
            "inf": with2(np.array([np.inf, 1.0, 3.0]), np.ones(3)),
            "0x0": with2(np.zeros(0), np.zeros(0)),
            "zero-batch": with2(np.zeros((0, 3)), np.zeros((0, 3))),
            "int": with2(np.array([1, 2, 3]), np.array([2, 0, 1])),
            "bool": with2(np.array([True, False, True]), np.array([True, True, False])),
            "complex": with2(np.array([1 + 1j, 2j, 1.0]), np.array([1j, 1 - 1j, 2.0])),
        }
    return Cell(args[inp], _ref(), derived=True)


def spec(op: Operation, inp: str) -> Cell:
    """The documented outcome of `op` on bad input `inp` (the same on every backend)."""
    cell = _spec_cell(op, inp)
    if op.kwargs and not isinstance(cell.outcome, NA):  # the declared keywords (matrix_power's n) in every call
        cell = Cell(cell.args, cell.outcome, kwargs={**op.kwargs, **cell.kwargs}, only=cell.only,
                    only_why=cell.only_why, note=cell.note, host=cell.host, derived=cell.derived)
    return cell


def _spec_cell(op: Operation, inp: str) -> Cell:
    dev = op.bad_input.get(inp)
    base = _common(op, inp) or (_linalg(op, inp) if op.kind == "linalg" else _elementwise(op, inp))
    if dev is None:
        return base
    if isinstance(dev, BadInput):
        return Cell(dev.args if dev.args is not None else base.args, dev.outcome,
                    kwargs=dict(dev.kwargs) or dict(base.kwargs),
                    only=dev.only if dev.only is not None else base.only,
                    only_why=dev.only_why or base.only_why, note=dev.note, host=base.host)
    if isinstance(dev, NA):
        return Cell((), dev)
    return Cell(base.args, dev, kwargs=base.kwargs, only=base.only, only_why=base.only_why, host=base.host)


def matrix_operations() -> tuple[Operation, ...]:
    """The operations of the matrix: every declared one on arrays (not on lists of them)."""
    return tuple(op for op in operations() if op.kind in ("linalg", "elementwise"))


def _spec() -> dict[tuple[str, str], Cell]:
    return {(op.name, inp): spec(op, inp) for op in matrix_operations() for inp in INPUTS}


class _LazySpec(dict):
    """The matrix, built on first use: after every module has declared its operations
    (built at import, it would miss those declared later and ask every backend about
    its dtypes while ``import xlinalg`` runs)."""

    _built = False

    def _build(self) -> None:
        if not self._built:
            self._built = True
            super().update(_spec())

    def __getitem__(self, key: Any) -> Cell:
        self._build()
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._build()
        return super().__contains__(key)

    def __iter__(self) -> Any:
        self._build()
        return super().__iter__()

    def __len__(self) -> int:
        self._build()
        return super().__len__()

    def items(self) -> Any:
        self._build()
        return super().items()

    def keys(self) -> Any:
        self._build()
        return super().keys()

    def values(self) -> Any:
        self._build()
        return super().values()

    def get(self, key: Any, default: Any = None) -> Any:
        self._build()
        return super().get(key, default)


#: (operation, input) -> :class:`Cell`, for every declared operation on arrays
SPEC: dict[tuple[str, str], Cell] = _LazySpec()


def cells_for(backends: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """The applicable (function, input, backend) cells: the ones a test runs."""
    out: list[tuple[str, str, str]] = []
    for (fn, inp), cell in SPEC.items():
        if isinstance(cell.outcome, NA):
            continue
        out.extend((fn, inp, b) for b in backends if cell.only is None or b in cell.only)
    return out


def undeclared(ops: tuple[Operation, ...] | None = None) -> list[str]:
    """The cells left to the reference where NumPy's reference itself raises: each
    needs its outcome declared (``bad_input=`` of the operation's ``@declare``)."""
    out = []
    for op in matrix_operations() if ops is None else ops:
        for inp in INPUTS:
            cell = SPEC[op.name, inp] if ops is None else spec(op, inp)
            if isinstance(cell.outcome, Returns) and cell.outcome.check is None:
                try:
                    op.expected(tuple(host_value(a) for a in cell.args), cell.kwargs)
                except Exception as exc:  # any refusal of NumPy's
                    out.append(f"{op.name}/{inp}: NumPy's reference raises {type(exc).__name__}: {exc}")
    return out


# ---------------------------------------------------------------------- the page
def _derived_text(op: Operation, cell: Cell) -> str:
    """What a cell left to the reference returns: NumPy's dtype and shape."""
    text = cell.outcome.doc()
    if isinstance(cell.outcome, Returns) and cell.derived:
        try:
            outs, dtype = op.expected(tuple(host_value(a) for a in cell.args), cell.kwargs)
        except Exception as exc:
            return f"undeclared: NumPy raises {type(exc).__name__}"
        shapes = ", ".join(str(o.shape) for o in outs)
        text += f" ({dtype}, shape {shapes})" if len(outs) == 1 else f" ({dtype}, shapes {shapes})"
    return text


def markdown() -> str:
    """The generated part of ``docs/bad-input-matrix.md``: counts, then a table per operation."""
    from .backends import get_backend

    backends = _backends()
    ops = matrix_operations()
    n_applicable = len(cells_for(backends))
    n_cpu = len(cells_for(tuple(b for b in backends if not get_backend(b).gpu)))
    total = len(ops) * len(INPUTS) * len(backends)
    lines = [
        f"Cells: {len(ops)} functions × {len(INPUTS)} inputs × {len(backends)} backends = {total}; "
        f"{n_applicable} applicable (tests), of which {n_cpu} on the CPU backends; the rest are n/a. "
        "*As NumPy* means the operation's NumPy reference, in the dtype of xlinalg's rule: its dtype "
        "and shapes are given.",
        "",
    ]
    for op in ops:
        lines += [f"## `{op.name}`", "", "| input | outcome (every backend) | backends / notes |", "|---|---|---|"]
        for inp, label in INPUTS.items():
            cell = SPEC[op.name, inp]
            notes = []
            if cell.only is not None and not isinstance(cell.outcome, NA):
                skipped = [b for b in backends if b not in cell.only]
                if cell.only_why == NO_F16 and skipped:
                    notes.append(f"n/a on {', '.join(skipped)} ({NO_F16})")
                elif skipped:
                    notes.append(f"{', '.join(cell.only)} only ({cell.only_why})")
            if cell.note:
                notes.append(cell.note)
            text = _derived_text(op, cell).replace("|", "\\|")
            where = "—" if isinstance(cell.outcome, NA) else ("; ".join(notes) or "all")
            lines.append(f"| {label} | {text} | {where} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
