"""Each public operation declared once, at its function.

The declaration (:func:`declare`, a decorator that returns the function itself:
no cost per call) says everything the rest of the project needs to know about
an operation, so that nothing else names it:

* its **kind** (``"linalg"``, ``"elementwise"`` or ``"sequence"``): its section
  of the API reference and the capabilities page, and which tests apply;
* its **array arguments** and what each must be (:data:`ARG_KINDS`): the arity,
  and the bad inputs that make sense for each argument;
* its **NumPy reference** (what the tests compare every backend with) and its
  **dtype rule** (:data:`DTYPE_RULES`);
* its **sample** inputs (and the **domain** its random inputs are drawn from);
* its **capability cells**: how each backend computes it (a default ``how`` and
  the cells of the backends or libraries that differ);
* only the **deviations** of its outcome on bad input from what its kind and
  its reference imply (a singular matrix raises, NumPy would give garbage...).

From these the project derives the dispatch tests (``tests/backends/test_dispatch.py``),
the elementwise and linear-algebra semantics tests (``tests/ops/test_elementwise.py``,
``tests/ops/test_operations.py``), the bad-input matrix (``tests/ops/test_bad_input.py``,
from :mod:`xlinalg._badinput`), the capabilities page, the bad-input page and
the API reference (``docs/``, rendered by Sphinx at build time). SciPy's
``xp_capabilities`` and array-api-extra's test recipe are the models.

A new linear-algebra function, with a sample input of its own (its domain: a
symmetric positive-definite matrix) and one outcome on bad input that differs
from its kind's and NumPy's (a matrix that is not positive definite raises,
naming the argument)::

    import numpy as np

from ._compare import compare_values
    from ._lib._declare import Raises, declare
    from ._lib._errors import LinAlgError

    def _spd(rng):
        m = rng.standard_normal((3, 3))
        return (m @ m.T + 3 * np.eye(3),)

    @declare(
        "linalg",
        args={"x": "square"},
        reference=np.linalg.cholesky,
        dtypes="linalg",
        sample=_spd,
        how="the standard's `linalg.cholesky`",
        backends={"numpy": "`np.linalg.cholesky`",
                  "torch": ("`torch.linalg.cholesky_ex`", "one device sync for the info flag")},
        bad_input={"singular": Raises(LinAlgError, r"`x` is not positive definite",
                                      "`x` is not positive definite …")},
    )
    def cholesky(x, /, *, upper=False, xp=None):
        ...

Nothing here imports an array library but NumPy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ._compare import compare_values

__all__ = [
    "ARG_KINDS",
    "DTYPE_RULES",
    "KINDS",
    "NA",
    "OPERATIONS",
    "BadInput",
    "Capability",
    "Operation",
    "Raises",
    "Returns",
    "declare",
    "operations",
    "reconstructs",
]

_F = TypeVar("_F", bound=Callable[..., Any])

#: the kinds of operation, in documentation order
KINDS = ("linalg", "elementwise", "sequence")

#: what an array argument must be; the bad-input matrix builds each argument's
#: bad inputs from it (:mod:`xlinalg._badinput`)
ARG_KINDS = {
    "any": "an array of any shape (elementwise; shapes broadcast)",
    "matrix": "a matrix or a stack of matrices, (..., M, N)",
    "square": "a square matrix or a stack of them, (..., M, M)",
    "rhs": "a right-hand side: a vector (M,) or a stack of matrices (..., M, K)",
    "operand": "an operand of a product: at least one dimension (1-D is a vector)",
    "vector": "a vector or a stack of vectors (..., N)",
    "sequence": "a list or tuple of arrays",
}

#: what integer, bool and low-precision inputs compute in
DTYPE_RULES = {
    "linalg": "integers and bool compute in float64; float16/bfloat16 raise TypeError",
    "float": "integers and bool compute in float64; float16 stays float16",
    "promote": "NumPy's promotion table on every backend (integers stay integers)",
}


class Capability(NamedTuple):
    """One (operation, backend) cell of the capabilities table."""

    #: whether the operation runs on the backend
    supported: bool
    #: how xlinalg computes it there (the native kernel, or the standard's operations)
    how: str
    #: known differences from the other backends ("" when none)
    notes: str = ""


# ---------------------------------------------------------------------- bad-input outcomes
@dataclass(frozen=True)
class Raises:
    """The call raises `exc` with a message matching the regex `match` (which
    names the argument at fault); `text` is its short form for the page."""

    exc: type
    match: str
    text: str = ""
    #: ``LinAlgError.members``, where checked
    members: tuple[int, ...] | None = None

    def doc(self) -> str:
        return f"`{self.exc.__name__}`: {self.text or self.match}"


@dataclass(frozen=True)
class Returns:
    """The call returns; `check` (NumPy level: ``check(outputs, inputs)`` with the
    outputs brought to the host) says what is right, or None: the operation's
    NumPy reference, in the dtype of its rule (:meth:`Operation.check`)."""

    text: str
    check: Callable[[tuple[np.ndarray, ...], tuple[np.ndarray, ...]], None] | None = field(
        default=None, compare=False)

    def doc(self) -> str:
        return f"result: {self.text}"


@dataclass(frozen=True)
class NA:
    """The input does not apply to the operation."""

    why: str

    def doc(self) -> str:
        return f"n/a: {self.why}"


Outcome = Raises | Returns | NA


@dataclass(frozen=True)
class BadInput:
    """A deviation with more than an outcome: its own arguments (NumPy arrays, or
    the markers of :mod:`xlinalg._badinput`), keyword arguments, a note for
    the page, or the backends it exists on."""

    outcome: Outcome
    args: tuple[Any, ...] | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict, compare=False)
    note: str = ""
    only: tuple[str, ...] | None = None
    only_why: str = ""


# ---------------------------------------------------------------------- result checks
def _outs(x: Any) -> tuple[Any, ...]:
    return tuple(x) if isinstance(x, tuple) else (x,)


def _tolerance(dtype: Any) -> float:
    return 1e-3 if np.dtype(dtype) in (np.float16, np.float32, np.complex64) else 1e-9


def all_nan(got: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...]) -> None:
    """Every entry of every output is NaN."""
    for g in got:
        assert np.isnan(g).all(), g


def some_nonfinite(got: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...]) -> None:
    """At least one entry (of all outputs) is not finite."""
    assert not np.isfinite(np.concatenate([g.ravel() for g in got])).all()


def finite_and_huge(got: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...]) -> None:
    """All finite, some entry beyond 1e12 (a numerically singular solve)."""
    x = got[0]
    assert np.isfinite(x).all()
    assert np.abs(x).max() > 1e12


def values(got: tuple[np.ndarray, ...], ref: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...],
           dtype: np.dtype) -> None:
    """The default comparison: each output has the reference's shape, the dtype of
    the rule (its real counterpart where the reference's output is real), and
    its values (NaN where the reference has NaN)."""
    assert len(got) == len(ref), f"{len(got)} outputs, the reference has {len(ref)}"
    for i, (g, r) in enumerate(zip(got, ref)):
        r = np.asarray(r)
        assert g.shape == r.shape, f"output {i}: shape {g.shape} != reference {r.shape}"
        want = _output_dtype(dtype, r)
        if want is None:  # an integer output (a rank, a count): its values
            assert g.dtype.kind in "biu", f"output {i}: dtype {g.dtype}, expected an integer"
            np.testing.assert_array_equal(g, r)
            continue
        assert g.dtype == want, f"output {i}: dtype {g.dtype} != expected {want}"
        if want.kind in "biu":
            np.testing.assert_array_equal(g, r.astype(want))
        else:
            compare_values(g, r, rtol=_tolerance(want), equal_nan=True)


def _output_dtype(dtype: np.dtype, ref: np.ndarray) -> np.dtype | None:
    if dtype.kind in "fc" and ref.dtype.kind in "biu":
        return None
    if dtype.kind == "c" and ref.dtype.kind == "f":
        return np.empty(0, dtype).real.dtype
    if dtype.kind == "f" and ref.dtype.kind == "c":  # a complex output of real input (eig)
        return np.result_type(dtype, np.complex64)
    return dtype


def reconstructs(rebuild: Callable[..., Any], unique: tuple[int, ...] = ()) -> Callable[..., None]:
    """A comparison for a factorization that is unique only up to signs or phases:
    every output has the reference's shape and the rule's dtype, the outputs at
    `unique` (singular values) equal the reference's, and ``rebuild(*outputs)``
    equals the first input (in the computation's precision).

    ``compare=reconstructs(lambda q, r: q @ r)`` declares QR's check."""

    def compare(got: tuple[np.ndarray, ...], ref: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...],
                dtype: np.dtype) -> None:
        assert len(got) == len(ref), f"{len(got)} outputs, the reference has {len(ref)}"
        for i, (g, r) in enumerate(zip(got, ref)):
            assert g.shape == np.shape(r), f"output {i}: shape {g.shape} != reference {np.shape(r)}"
            want = _output_dtype(dtype, np.asarray(r))
            assert g.dtype == want, f"output {i}: dtype {g.dtype} != expected {want}"
        x = np.asarray(args[0]).astype(np.complex128 if dtype.kind == "c" else np.float64)
        tol = 10 * _tolerance(dtype)
        scale = max(1.0, float(np.abs(x).max(initial=0)))
        for i in unique:
            compare_values(got[i], np.asarray(ref[i]), rtol=tol, scale=scale)
        compare_values(np.asarray(rebuild(*got)), x, rtol=tol, scale=scale, header="the factors do not rebuild the input")

    return compare


# ---------------------------------------------------------------------- the declaration
@dataclass(frozen=True, eq=False)
class Operation:
    """One public operation, as declared at its function (see :func:`declare`)."""

    name: str
    func: Callable[..., Any]
    kind: str
    #: (name, kind) of each array argument, in order
    args: tuple[tuple[str, str], ...]
    reference: Callable[..., Any] | str
    dtypes: str
    how: str
    cells: Mapping[str, Capability | str | tuple[str, str]]
    sample: Callable[[np.random.Generator], tuple[Any, ...]] | tuple[Any, ...] | None
    #: keyword arguments of every call the tests make (its sample, its bad inputs)
    kwargs: Mapping[str, Any]
    domain: tuple[float | None, float | None]
    bad_input: Mapping[str, Outcome | BadInput]
    compare: Callable[..., None]
    #: whether it works under ``jax.jit`` (traced: NaN instead of errors)
    jit: bool
    #: whether it builds Dask graphs without computing
    lazy: bool
    #: whether it promises no floating-point warnings for any input
    silent: bool
    #: whether it takes stacks (batches) of its inputs, as the standard's linalg does
    batched: bool = True

    @property
    def arity(self) -> int:
        return len(self.args)

    @property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.args)

    @property
    def arg_kinds(self) -> tuple[str, ...]:
        return tuple(k for _, k in self.args)

    # ------------------------------------------------------------------ reference
    def numpy_reference(self) -> Callable[..., Any]:
        ref = self.reference
        if isinstance(ref, str):  # "module:attribute", imported when first needed
            mod, _, attr = ref.partition(":")
            return getattr(importlib.import_module(mod), attr)
        return ref

    def result_dtype(self, *dtypes: Any) -> np.dtype:
        """The dtype of the result for inputs of `dtypes` (NumPy dtypes), by the rule."""
        dt = np.result_type(*[np.dtype(d) for d in dtypes])
        if self.dtypes != "promote" and dt.kind in "biu":
            return np.dtype(np.float64)
        return dt

    def expected(self, args: tuple[np.ndarray, ...], kwargs: Mapping[str, Any] | None = None
                 ) -> tuple[tuple[np.ndarray, ...], np.dtype]:
        """The reference's outputs for host `args` and the result dtype of the rule.

        Exact (integer, bool) results are computed on the inputs as they are;
        inexact ones in float64 (complex128), whatever the inputs' precision."""
        dtype = self.result_dtype(*[np.asarray(a).dtype for a in args])
        ref = self.numpy_reference()
        if dtype.kind in "biu":
            wide = [np.asarray(a) for a in args]
        else:
            wide = [np.asarray(a).astype(np.complex128 if np.asarray(a).dtype.kind == "c" else np.float64)
                    for a in args]
        with np.errstate(all="ignore"):
            out = ref(*wide, **dict(kwargs or self.kwargs))
        return tuple(np.asarray(o) for o in _outs(out)), dtype

    def check(self, got: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...],
              kwargs: Mapping[str, Any] | None = None) -> None:
        """Assert host outputs `got` are the reference's for host inputs `args`."""
        ref, dtype = self.expected(args, kwargs)
        self.compare(got, ref, args, dtype)

    # ------------------------------------------------------------------ inputs
    def sample_args(self, rng: np.random.Generator | None = None) -> tuple[Any, ...]:
        """The sample inputs (NumPy arrays): the declared ones, else one per argument kind."""
        if callable(self.sample):
            return tuple(self.sample(rng if rng is not None else np.random.default_rng(0)))
        if self.sample is not None:
            return tuple(self.sample)
        if rng is not None:
            return tuple(self.draw(rng, k, i) for i, k in enumerate(self.arg_kinds))
        return tuple(_FIXED[k](i) for i, k in enumerate(self.arg_kinds))

    def draw(self, rng: np.random.Generator, kind: str, position: int = 0,
             batch: tuple[int, ...] = ()) -> np.ndarray:
        """Random float64 input for an argument of `kind`, inside the declared domain."""
        shape = {"any": (2, 3), "matrix": (3, 4), "square": (3, 3), "rhs": (3, 2),
                 "operand": (3, 3) if position == 0 else (3, 2), "vector": (3,)}[kind]
        x = rng.standard_normal((*batch, *shape))
        if kind == "square":
            x = x + 2 * np.sqrt(shape[-1]) * np.eye(shape[-1])  # well conditioned
        return self.to_domain(x)

    def to_domain(self, x: np.ndarray) -> np.ndarray:
        """Real values `x` (standard normal draws) mapped into the declared domain,
        away from its ends (complex values are left as they are)."""
        lo, hi = self.domain
        if np.asarray(x).dtype.kind == "c" or (lo is None and hi is None):
            return x
        if lo is not None and hi is not None:
            return lo + (hi - lo) * (0.05 + 0.9 / (1 + np.exp(-x)))
        if lo is not None:
            return lo + 0.1 + np.abs(x)
        assert hi is not None
        return hi - 0.1 - np.abs(x)

    # ------------------------------------------------------------------ capabilities
    def capabilities(self, backends: Sequence[Any]) -> dict[str, Capability]:
        """backend id -> :class:`Capability`: the default ``how`` for every backend of
        `backends` (the registry's :class:`~xlinalg.backends.Backend` objects), then the
        cells given per library (``"torch"``), then per backend id."""
        names = [b.name for b in backends]
        library = {b.name: b.library or b.name for b in backends}
        libraries = set(library.values())
        unknown = [k for k in self.cells if k not in names and k not in libraries]
        if unknown:
            raise ValueError(f"{self.name}: capability cells for unknown backends or libraries {unknown}; "
                             f"backends: {', '.join(names)}; libraries: {', '.join(sorted(libraries))}")
        out = {n: Capability(True, self.how) for n in names}
        for per_library in (True, False):
            for key, cell in self.cells.items():
                for n in names:
                    lib = library[n]
                    if (key == lib and key != n) if per_library else key == n:
                        out[n] = _capability(cell)
        return out


def _capability(cell: Capability | str | tuple[str, str]) -> Capability:
    if isinstance(cell, Capability):
        return cell
    if isinstance(cell, str):
        return Capability(True, cell)
    return Capability(True, *cell)


_FIXED: dict[str, Callable[[int], np.ndarray]] = {
    "any": lambda i: np.ones(3),
    "matrix": lambda i: np.eye(3),
    "square": lambda i: np.eye(3) * 2,
    "rhs": lambda i: np.ones(3),
    "operand": lambda i: np.eye(3) if i == 0 else np.ones((3, 2)),
    "vector": lambda i: np.ones(3),
}

#: name -> declaration, in declaration order (:func:`operations` gives the documentation order)
OPERATIONS: dict[str, Operation] = {}


def declare(
    kind: str,
    *,
    args: Mapping[str, str],
    reference: Callable[..., Any] | str,
    dtypes: str,
    how: str,
    backends: Mapping[str, Capability | str | tuple[str, str]] | None = None,
    sample: Callable[[np.random.Generator], tuple[Any, ...]] | tuple[Any, ...] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    domain: tuple[float | None, float | None] = (None, None),
    bad_input: Mapping[str, Outcome | BadInput] | None = None,
    compare: Callable[..., None] | None = None,
    jit: bool = True,
    lazy: bool = True,
    silent: bool = False,
    batched: bool = True,
    name: str | None = None,
) -> Callable[[_F], _F]:
    """Declare the public operation defined below (the decorator returns it unchanged).

    Parameters
    ----------
    kind : {"linalg", "elementwise", "sequence"}
        Its section (API reference, capabilities page) and test family.
    args : dict
        Each array argument's name and kind (:data:`ARG_KINDS`), in order.
    reference : callable or "module:attribute"
        The NumPy reference the tests compare with: called with the arguments as
        float64 (complex128) NumPy arrays and the call's keyword arguments; its
        outputs in the same order as the operation's.
    dtypes : {"linalg", "float", "promote"}
        The dtype rule (:data:`DTYPE_RULES`).
    how : str
        How every backend computes it, unless a cell says otherwise.
    backends : dict, optional
        Capability cells that differ from `how`, keyed by backend id
        (``"torch-cuda"``) or library (``"torch"``: each of its backends): a
        string (how), a pair (how, differences) or a :class:`Capability`.
    sample : tuple or callable, optional
        Sample inputs (NumPy arrays), or ``sample(rng)`` making them; by default one
        per argument kind (random ones drawn inside `domain`).
    kwargs : dict, optional
        Keyword arguments of the tests' calls.
    domain : (low, high), optional
        Where random real inputs are drawn (``(0, None)``: positive).
    bad_input : dict, optional
        Only the inputs of the bad-input matrix (:mod:`xlinalg._badinput`)
        whose outcome differs from what the kind and the reference imply: input
        name -> :class:`Raises`, :class:`Returns`, :class:`NA` or :class:`BadInput`.
    compare : callable, optional
        ``compare(outputs, reference_outputs, inputs, dtype)`` (host arrays); by
        default the values (:func:`values`); :func:`reconstructs` for factors.
    jit, lazy, silent : bool, optional
        Whether it runs under ``jax.jit``, builds Dask graphs without computing,
        and promises no floating-point warnings.
    batched : bool, optional
        Whether a stack of its sample inputs (a leading batch axis) gives the stack
        of its results (linear algebra; the derived tests check it).
    name : str, optional
        Its public name, if not the function's.
    """
    if kind not in KINDS:
        raise ValueError(f"declare: `kind` must be one of {KINDS}, got {kind!r}")
    if dtypes not in DTYPE_RULES:
        raise ValueError(f"declare: `dtypes` must be one of {tuple(DTYPE_RULES)}, got {dtypes!r}")
    bad = [k for k in args.values() if k not in ARG_KINDS]
    if bad:
        raise ValueError(f"declare: argument kinds {bad} are not among {tuple(ARG_KINDS)}")

    def decorate(func: _F) -> _F:
        op_name = name or func.__name__
        if op_name in OPERATIONS:
            raise ValueError(f"declare: {op_name!r} is declared twice")
        OPERATIONS[op_name] = Operation(
            name=op_name, func=func, kind=kind, args=tuple(args.items()), reference=reference,
            dtypes=dtypes, how=how, cells=dict(backends or {}), sample=sample, kwargs=dict(kwargs or {}),
            domain=domain, bad_input=dict(bad_input or {}), compare=compare or values, jit=jit,
            lazy=lazy, silent=silent, batched=batched,
        )
        return func

    return decorate


def operations(kind: str | None = None) -> tuple[Operation, ...]:
    """The declared operations in documentation order (by kind, then as declared).

    Complete once ``xlinalg`` is imported (each module declares its own as it is
    imported; this module imports none of them)."""
    ops = sorted(OPERATIONS.values(), key=lambda op: KINDS.index(op.kind))
    return tuple(op for op in ops if kind is None or op.kind == kind)
