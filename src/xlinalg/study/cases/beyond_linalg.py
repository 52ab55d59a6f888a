"""Beyond the documents: the linear algebra ported code needs first (issue 38).

``inv``, ``cholesky``, ``eigh``, ``lstsq`` and ``det`` on a batch of small matrices
and on one large matrix, on every backend, through xlinalg's functions (the library's
own kernel where it has one, with xlinalg's contract: one semantics, singular members
named, lazy on Dask). Opt-in (``--cases linalg``, a group the study declares):
not in the default run's time.

A size is ``(batch, n)``: ``batch`` matrices of ``n x n`` stacked on a leading axis,
or, for ``batch`` 1, one ``n x n`` matrix with no batch axis. The inputs are close
to the identity (``I + 0.1 G / sqrt(n)``, ``G`` standard normal; symmetrized where
the operation needs it): every eigenvalue within about 0.2 of 1, so the inverse is
well conditioned, the Cholesky factor exists and the determinant of a 4096 x 4096
matrix stays a float, and the check measures rounding, not conditioning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...bench._cases import Case, register_case

__all__: list[str] = []

_SIZES = {"quick": [(64, 4), (1, 64)], "default": [(1000, 8), (1, 1024)],
          "full": [(10000, 8), (1, 2048)]}


def _near_identity(rng: np.random.Generator, s: Any, *, symmetric: bool = False) -> np.ndarray:
    batch, n = s
    shape = (n, n) if batch == 1 else (batch, n, n)
    g = rng.standard_normal(shape) / np.sqrt(n)
    if symmetric:
        g = (g + np.swapaxes(g, -1, -2)) / 2
    return np.eye(n) + 0.1 * g


def _matrices(s: Any) -> int:
    return int(s[0])


def _rtol(float32: float) -> Callable[[str, Any], float]:
    return lambda dtype, s: {"float64": 1e-10, "float32": float32}.get(dtype, 1e-2)


def _register(name: str, what: str, *, op: Callable[..., Any], setup: Callable[..., Any],
              reference: Callable[..., Any], flops_per_matrix: Callable[[int], float],
              result_for_check: Callable[[Any], Any] | None = None, float32: float = 1e-4,
              inputs: int = 1) -> None:
    register_case(Case(
        name=name, section="Extra", group="linalg", units="GFLOP/s",
        doc=f"Beyond the documents: {what}, xlinalg.{name.removeprefix('linalg_')} on a batch of "
            "small matrices and on one large one",
        sizes=_SIZES, size_names=("batch", "n"),
        setup=setup, op=op, reference=reference, result_for_check=result_for_check,
        flops=lambda s: _matrices(s) * flops_per_matrix(s[1]),
        bytes=lambda s, itemsize: itemsize * _matrices(s) * (inputs + 1.0) * s[1] * s[1],
        rtol=_rtol(float32),
    ))


_register(
    "linalg_inv", "inverse of each matrix",
    setup=lambda rng, s: (_near_identity(rng, s),),
    op=lambda ctx, a: ctx.xl.inv(a),
    reference=np.linalg.inv,
    flops_per_matrix=lambda n: 2.0 * n**3,
)

_register(
    "linalg_cholesky", "Cholesky factor of each symmetric positive-definite matrix",
    setup=lambda rng, s: (_near_identity(rng, s, symmetric=True),),
    op=lambda ctx, a: ctx.xl.cholesky(a),
    reference=np.linalg.cholesky,
    flops_per_matrix=lambda n: n**3 / 3.0,
)

_register(
    "linalg_eigh", "eigenvalues and eigenvectors of each symmetric matrix (checked on the "
                   "eigenvalues: eigenvectors are unique only up to sign)",
    setup=lambda rng, s: (_near_identity(rng, s, symmetric=True),),
    op=lambda ctx, a: tuple(ctx.xl.eigh(a)),
    reference=np.linalg.eigvalsh,
    result_for_check=lambda r: r[0],
    flops_per_matrix=lambda n: 9.0 * n**3,
    float32=1e-5,
)

_register(
    "linalg_det", "determinant of each matrix",
    setup=lambda rng, s: (_near_identity(rng, s),),
    op=lambda ctx, a: ctx.xl.det(a),
    reference=np.linalg.det,
    flops_per_matrix=lambda n: 2.0 / 3.0 * n**3,
    float32=1e-3,  # the product of n pivots: n roundings
)


def _lstsq_setup(rng: np.random.Generator, s: Any) -> tuple[np.ndarray, np.ndarray]:
    # a tall (2n x n) system of full rank: `I` stacked on a near-identity block
    n = s[1]
    top = _near_identity(rng, s)
    a = np.concatenate([top, np.broadcast_to(np.eye(n), top.shape)], axis=-2)
    # one matrix: a vector right-hand side; a batch: one column each (a batch of
    # vectors would read as one matrix, the standard's rule)
    b = rng.standard_normal(a.shape[:-1] if a.ndim == 2 else (*a.shape[:-1], 1))
    return a, b


def _lstsq_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.ndim == 2:
        return np.linalg.lstsq(a, b, rcond=None)[0]
    return np.stack([np.linalg.lstsq(ai, bi, rcond=None)[0] for ai, bi in zip(a, b)])


_register(
    "linalg_lstsq", "least squares of each tall 2n x n system (checked on the solution)",
    setup=_lstsq_setup,
    op=lambda ctx, a, b: tuple(ctx.xl.lstsq(a, b)),
    reference=_lstsq_reference,
    result_for_check=lambda r: r[0],
    flops_per_matrix=lambda n: 2.0 * (2 * n) * n**2 - 2.0 / 3.0 * n**3,
    inputs=2,
)
