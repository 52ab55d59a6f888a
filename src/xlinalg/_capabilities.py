"""What each public operation does on each backend, as data.

One table, function × backend: whether it is supported, *how* xlinalg computes
it there (which native kernel, or which standard operations), and the known
differences a user should expect. It is the single list of xlinalg's operations:
the tests take their function lists from :data:`OPERATIONS`, and
``docs/capabilities.md`` is generated from :func:`markdown` (SciPy keeps the same
kind of table with its ``xp_capabilities``). A test checks that the table covers
every public operation and every registry backend, and that the page is current::

    python -m xlinalg._capabilities > docs/capabilities.md

Nothing here imports an array library.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

from .backends import BACKEND_NAMES

__all__ = ["CAPABILITIES", "ELEMENTWISE", "EXTENSION", "LINALG", "OPERATIONS", "Capability", "markdown"]


class Capability(NamedTuple):
    """One (operation, backend) cell of the table."""

    #: whether the operation runs on the backend
    supported: bool
    #: how xlinalg computes it there (the native kernel, or the standard's operations)
    how: str
    #: known differences from the other backends ("" when none)
    notes: str = ""


#: the array functions of the linear-algebra part, in documentation order
LINALG = ("solve", "matmul", "svd", "svdvals", "qr")
#: the elementwise functions
ELEMENTWISE = ("add", "subtract", "multiply", "divide", "exp", "sigmoid")
#: the rest of the array API standard's linalg extension, and lstsq
EXTENSION = (
    "inv", "cholesky", "det", "slogdet", "eigh", "eigvalsh", "eig", "eigvals", "lstsq", "pinv",
    "matrix_rank", "matrix_norm", "vector_norm", "matrix_power", "matrix_transpose", "diagonal",
    "trace", "outer", "tensordot", "vecdot", "cross",
)
#: every public operation on arrays (the registry's own functions, ``backend_of``,
#: ``to``, ``synchronize``, ``available_backends``, are not operations)
OPERATIONS = (*LINALG, *ELEMENTWISE, "solve_many", *EXTENSION)

def _same(how: str, *groups: dict[str, Capability], **per_backend: Capability) -> dict[str, Capability]:
    """Every backend computes it the same way (`how`), but those given in `groups`
    (:func:`_torch`, :func:`_jax`) or by keyword (``torch_cpu=`` for torch-cpu)."""
    cells = {b: Capability(True, how) for b in BACKEND_NAMES}
    for group in (*groups, per_backend):
        for key, cap in group.items():
            cells[key.replace("_", "-")] = cap
    return cells


def _c(how: str, notes: str = "") -> Capability:
    return Capability(True, how, notes)


def _torch(cap: Capability) -> dict[str, Capability]:
    """The same cell for torch-cpu and torch-cuda (keyword arguments of :func:`_same`)."""
    return {"torch_cpu": cap, "torch_cuda": cap}


def _jax(cap: Capability) -> dict[str, Capability]:
    """The same cell for jax-cpu and jax-gpu."""
    return {"jax_cpu": cap, "jax_gpu": cap}


_BINARY_NATIVE = (
    "the library's own `{op}` directly for two arrays of one dtype; else the standard's "
    "`{op}` after NumPy's promotion table"
)
_BINARY = "the standard's `{op}` after NumPy's promotion table (the checked path)"


def _binary(op: str) -> dict[str, Capability]:
    native = _c(_BINARY_NATIVE.format(op=op))
    return _same(
        _BINARY.format(op=op), _torch(native), _jax(native),
        numpy=_c(f"the ufunc `np.{op}` directly for two arrays of one dtype; else NumPy's promotion"),
    )


_SVD_ON_DEVICE = _c("the standard's `linalg.svd`, then a finite check of `S`",
                    "reading `S` synchronizes the device")

#: operation -> backend -> :class:`Capability`
CAPABILITIES: dict[str, dict[str, Capability]] = {
    "solve": _same(
        "the standard's `linalg.solve` (its error for a singular matrix becomes xlinalg's)",
        numpy=_c("NumPy's solve gufunc (behind `numpy.linalg.solve`) under its floating-point "
                 "trap: a zero pivot is detected as NumPy detects it"),
        torch_cpu=_c("`torch.linalg.solve`; `torch.linalg.solve_ex` for `errors=\"nan\"`",
                     "`b` of shape `a.shape[:-1]` is given a leading unit axis (torch alone "
                     "would read a batch of vectors)"),
        torch_cuda=_c("`torch.linalg.solve`; `torch.linalg.solve_ex` for `errors=\"nan\"`",
                      "`b` as on torch-cpu; `errors=\"raise\"` synchronizes the device (torch's "
                      "own check), `errors=\"nan\"` does not"),
        cupy=_c("`cupy.linalg.solve` on explicitly broadcast operands, then an `isfinite` check",
                "`errors=\"raise\"` synchronizes the device"),
        jax_cpu=_c("`jnp.linalg.solve`, then a zero-copy host look at the result; one jitted "
                   "call for `errors=\"nan\"`",
                   "under `jax.jit`: NaN for singular members, never an exception"),
        jax_gpu=_c("one jitted call returning the solution and a non-finite flag; reading the "
                   "flag waits (`errors=\"raise\"`)",
                   "under `jax.jit`: NaN for singular members, never an exception"),
        dask=_c("NumPy's solve on each block (`map_blocks`), one task a chunk",
                "lazy: a singular member raises when its block is computed"),
    ),
    "matmul": _same(
        "the standard's `matmul`",
        _torch(_c("`torch.matmul` directly for one dtype; mixed dtypes promoted first",
                  "torch refuses mixed dtypes; xlinalg promotes them as NumPy does")),
        _jax(_c("`jnp.matmul` directly for one dtype")),
        numpy=_c("`np.matmul`"),
    ),
    "svd": _same(
        "the standard's `linalg.svd`, then a finite check of `S`",
        numpy=_c("`np.linalg.svd`, then a finite check of `S`"),
        torch_cuda=_SVD_ON_DEVICE,
        cupy=_SVD_ON_DEVICE,
        jax_cpu=_c("`jnp.linalg.svd`, then a finite check of `S`", "under `jax.jit`: NaN, no error"),
        jax_gpu=_c("`jnp.linalg.svd`, then a finite check of `S`",
                   "reading `S` waits; under `jax.jit`: NaN, no error"),
        dask=_c("NumPy's SVD on each matrix (a gufunc over the batch) when a matrix is in one "
                "chunk or fits one automatic chunk; Dask's tall-and-skinny SVD (`da.linalg.svd`) "
                "for a larger chunked matrix",
                "a chunked non-square matrix larger than one automatic chunk with "
                "`full_matrices=True` raises `ValueError`"),
    ),
    "svdvals": _same(
        "the standard's `linalg.svdvals`, then a finite check",
        numpy=_c("`np.linalg.svd(..., compute_uv=False)`, then a finite check"),
        torch_cpu=_c("`torch.linalg.svdvals`, then a finite check"),
        torch_cuda=_c("`torch.linalg.svdvals`, then a finite check",
                      "reading the values synchronizes the device"),
        cupy=_c("the standard's `linalg.svdvals`, then a finite check",
                "reading the values synchronizes the device"),
        dask=_c("NumPy's singular values on each matrix (a gufunc) when a matrix is in one chunk "
                "or fits one automatic chunk; `S` of Dask's tall-and-skinny SVD for a larger "
                "chunked matrix"),
    ),
    "qr": _same(
        "the standard's `linalg.qr`",
        numpy=_c("`np.linalg.qr`"),
        dask=_c("NumPy's QR on each matrix (a gufunc) when a matrix is in one chunk or fits one "
                "automatic chunk; Dask's tall-and-skinny QR (`da.linalg.qr`) for a larger "
                "chunked matrix",
                "a chunked tall matrix larger than one automatic chunk with `mode=\"complete\"` "
                "raises `ValueError`"),
    ),
    "add": _binary("add"),
    "subtract": _binary("subtract"),
    "multiply": _binary("multiply"),
    "divide": _same(
        "the standard's `divide` after NumPy's promotion table; integers in the default "
        "float dtype",
        numpy=_c("`np.divide` under `np.errstate` (division by zero and invalid ignored): "
                 "IEEE inf/NaN, no warning"),
        dask=_c("`np.divide` on each block (`elemwise`), warnings off", "lazy"),
        array_api_strict=_c("the standard's `divide` under `np.errstate` (NumPy inside), "
                            "no warning"),
    ),
    "exp": _same(
        "the standard's `exp`; integers and bools in the default float dtype",
        numpy=_c("`np.exp` under `np.errstate` (overflow ignored): IEEE inf, no warning"),
        dask=_c("`np.exp` on each block (`map_blocks`), warnings off", "lazy"),
        array_api_strict=_c("the standard's `exp` under `np.errstate` (NumPy inside), "
                            "no warning"),
    ),
    "sigmoid": _same(
        "the two-branch formula on `exp(-|x|)` from the standard's operations (never overflows)",
        _torch(_c("`torch.sigmoid`")),
        _jax(_c("`jax.nn.sigmoid`",
                "complex input: JAX is more careful for large negative real parts")),
        numpy=_c("`scipy.special.expit` for float32 and float64 when SciPy is installed; "
                 "else the two-branch formula"),
        cupy=_c("`cupyx.scipy.special.expit` for real floats; else the two-branch formula"),
        dask=_c("NumPy's sigmoid on each block (`map_blocks`)", "lazy"),
    ),
    "solve_many": _same(
        "systems grouped by shapes and dtypes; each group stacked with the standard's `stack` "
        "and solved by one batched `solve`",
        _torch(_c("systems grouped by shapes and dtypes; `torch.stack`, one batched `solve` "
                  "a group")),
        numpy=_c("systems grouped by shapes and dtypes; a group of C-contiguous arrays is "
                 "stacked by joining their bytes; one batched `solve` a group"),
        jax_cpu=_c("systems grouped by shapes and dtypes; stacked through NumPy (zero-copy "
                   "reads), one batched `solve` a group"),
        dask=_c("systems grouped by shapes and dtypes; stacked lazily, one batched `solve` a "
                "group", "a singular system is reported when a result is computed"),
    ),
}


_LAZY = "lazy: raises when the block is computed"
_DASK_GUFUNC = "NumPy's on each matrix (a gufunc over the batch), lazily"


def _native(how: str, dask: str = _DASK_GUFUNC, dask_notes: str = "lazy", **per: Capability) -> dict[str, Capability]:
    """The library's own routine everywhere but Dask (NumPy's per block) and `per`."""
    return _same(how, dask=_c(dask, dask_notes), **per)


_EXTENSION: dict[str, dict[str, Capability]] = {
    "inv": _same(
        "`solve(x, I)` through the backend's solve path (what each library's own `inv` "
        "computes): singular members as `solve` reports them",
        numpy=_c("the gufunc behind `numpy.linalg.inv`, in the input's precision, under its "
                 "floating-point trap; `solve(x, I)` to name singular members"),
        jax_cpu=_c("`solve(x, I)` as for `solve`", "under `jax.jit`: NaN for singular members"),
        jax_gpu=_c("`solve(x, I)` as for `solve`", "under `jax.jit`: NaN for singular members"),
        dask=_c("NumPy's solve with I on each block", _LAZY),
    ),
    "cholesky": _same(
        "the standard's `linalg.cholesky`; a library that fails the whole batch is asked "
        "member by member on the failure path",
        numpy=_c("the gufunc behind `numpy.linalg.cholesky` (lower), in the input's precision: "
                 "NaN for failing members"),
        torch_cpu=_c("`torch.linalg.cholesky_ex` (per-member info)"),
        torch_cuda=_c("`torch.linalg.cholesky_ex` (per-member info)",
                      "`errors=\"raise\"` reads the info: a device sync"),
        cupy=_c("the standard's `linalg.cholesky`, then a finite check",
                "CuPy may return finite garbage for a matrix that is not positive definite "
                "(not run on a device here)"),
        jax_cpu=_c("`jnp.linalg.cholesky(symmetrize_input=False)`: NaN for failing members",
                   "under `jax.jit`: NaN, never an exception"),
        jax_gpu=_c("`jnp.linalg.cholesky(symmetrize_input=False)`: NaN for failing members",
                   "under `jax.jit`: NaN, never an exception"),
        dask=_c("NumPy's cholesky on each block", _LAZY),
    ),
    "det": _native("the standard's `linalg.det`",
                   numpy=_c("the gufunc behind `numpy.linalg.det`, in the input's precision")),
    "slogdet": _native("the standard's `linalg.slogdet`",
                       numpy=_c("the gufunc behind `numpy.linalg.slogdet`, in the input's precision")),
    "eigh": _native("the standard's `linalg.eigh`, then a finite check",
                    numpy=_c("the gufunc behind `numpy.linalg.eigh` (lower), in the input's precision"),
                    jax_cpu=_c("`jnp.linalg.eigh(symmetrize_input=False)`", "under `jax.jit`: NaN, no error"),
                    jax_gpu=_c("`jnp.linalg.eigh(symmetrize_input=False)`", "under `jax.jit`: NaN, no error")),
    "eigvalsh": _native("the standard's `linalg.eigvalsh`, then a finite check",
                        numpy=_c("the gufunc behind `numpy.linalg.eigvalsh` (lower), in the input's precision"),
                        jax_cpu=_c("`jnp.linalg.eigh(symmetrize_input=False)`"),
                        jax_gpu=_c("`jnp.linalg.eigh(symmetrize_input=False)`")),
    "eig": _native("the standard's `linalg.eig`, cast to complex, then a finite check",
                   numpy=_c("`np.linalg.eig`, cast to complex"),
                   jax_gpu=_c("`jnp.linalg.eig`", "JAX computes eig on the host (not run here)")),
    "eigvals": _native("the standard's `linalg.eigvals`, cast to complex, then a finite check",
                       numpy=_c("`np.linalg.eigvals`, cast to complex"),
                       jax_gpu=_c("`jnp.linalg.eigvals`", "JAX computes eig on the host (not run here)")),
    "lstsq": _same("xlinalg's `svd` (reduced), then the standard's operations",
                   dask=_c("xlinalg's `svd` (Dask's tall-and-skinny SVD for a chunked matrix), "
                           "then Dask's operations", "lazy")),
    "pinv": _same("xlinalg's `svd` (reduced), then the standard's operations",
                  dask=_c("xlinalg's `svd` on Dask, then Dask's operations", "lazy")),
    "matrix_rank": _same("xlinalg's `svdvals`, then a count above the tolerance",
                         dask=_c("xlinalg's `svdvals` on Dask, then a count", "lazy")),
    "matrix_norm": _same(
        "the standard's `linalg.matrix_norm` for 'fro', 1, -1, inf, -inf; xlinalg's `svdvals` for 2, -2, 'nuc'",
        _torch(_c("`torch.linalg.matrix_norm` for 'fro', 1, -1, inf, -inf; xlinalg's `svdvals` for 2, -2, 'nuc'")),
        numpy=_c("`np.linalg.norm` for 'fro', 1, -1, inf, -inf; xlinalg's `svdvals` for 2, -2, 'nuc'"),
        dask=_c("Dask's reductions; xlinalg's `svdvals` for 2, -2, 'nuc'", "lazy"),
    ),
    "vector_norm": _same(
        "the standard's `linalg.vector_norm`",
        _torch(_c("`torch.linalg.vector_norm`")),
        dask=_c("Dask's reductions (the standard's operations)", "lazy"),
    ),
    "matrix_power": _same("the standard's `linalg.matrix_power`; a negative power of xlinalg's `inv`",
                          _torch(_c("`torch.linalg.matrix_power`; a negative power of xlinalg's `inv`")),
                          dask=_c("repeated squaring with Dask's `matmul`", "lazy")),
    "matrix_transpose": _same("the standard's `matrix_transpose`"),
    "diagonal": _same("the standard's `linalg.diagonal`"),
    "trace": _same("the standard's `linalg.trace`"),
    "outer": _same("the standard's `linalg.outer` after NumPy's promotion table"),
    "tensordot": _same("the standard's `tensordot` after NumPy's promotion table"),
    "vecdot": _same("the standard's `vecdot` after NumPy's promotion table",
                    _torch(_c("`torch.linalg.vecdot` after NumPy's promotion table"))),
    "cross": _same("the standard's `linalg.cross` after NumPy's promotion table",
                   dask=_c("the standard's indexing and arithmetic, lazily")),
}
CAPABILITIES.update(_EXTENSION)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown() -> str:
    """``docs/capabilities.md``: one table per operation (backend, how, differences)."""
    out = [
        "# Capabilities: each operation on each backend",
        "",
        "Generated from `src/xlinalg/_capabilities.py` by "
        "`python -m xlinalg._capabilities > docs/capabilities.md`; do not edit by hand "
        "(a test checks that this page is current). Every operation is supported on every "
        "backend; *how* says which kernel runs there, *differences* what to expect that "
        "differs. The rules every backend follows are in {doc}`semantics`; what the checks "
        "cost, in {doc}`performance`.",
    ]
    for op in OPERATIONS:
        out += ["", f"## `{op}`", "", "| backend | supported | how | differences |",
                "|---|---|---|---|"]
        for backend in BACKEND_NAMES:
            cap = CAPABILITIES[op][backend]
            out.append(f"| {backend} | {'yes' if cap.supported else 'no'} | {_cell(cap.how)} "
                       f"| {_cell(cap.notes) or '-'} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
