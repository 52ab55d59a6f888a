"""The exception and warning classes xlinalg raises."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["LinAlgError", "XlinalgWarning"]


class LinAlgError(np.linalg.LinAlgError, RuntimeError):
    """A matrix was singular (or a decomposition did not converge).

    One class on every backend. It subclasses both :class:`numpy.linalg.LinAlgError`
    (itself a :class:`ValueError`) and :class:`RuntimeError` (the base of
    ``torch.linalg.LinAlgError``), so ``except`` clauses written for NumPy or
    PyTorch keep working.

    Attributes
    ----------
    indices : tuple of tuple of int
        The batch indices of the failing matrices (``()`` for an unbatched input),
        in C order. ``members`` is their flat positions in the batch.
    members : tuple of int
        Flat positions of the failing matrices in the batch.
    """

    def __init__(
        self,
        message: str,
        *,
        indices: Sequence[tuple[int, ...]] = (),
        members: Sequence[int] = (),
    ) -> None:
        super().__init__(message)
        self.indices = tuple(tuple(int(i) for i in ix) for ix in indices)
        self.members = tuple(int(m) for m in members)

    def __reduce__(self) -> tuple[object, ...]:
        # pickled with its attributes (a Dask worker raises it, the client re-raises it)
        return (_rebuild, (type(self), str(self), self.indices, self.members))


def _rebuild(cls: type[LinAlgError], message: str, indices: Sequence[tuple[int, ...]],
             members: Sequence[int]) -> LinAlgError:
    return cls(message, indices=indices, members=members)


class XlinalgWarning(UserWarning):
    """Base class of the warnings xlinalg emits."""
