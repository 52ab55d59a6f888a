"""xlinalg: linear algebra written once against the array API standard.

``solve``, ``matmul``, ``svd``, ``svdvals``, ``qr`` and elementwise functions run on
whichever library owns their inputs (NumPy, PyTorch, CuPy, JAX, Dask,
array-api-strict) with one set of semantics; see ``docs/semantics.md``.
"""

from ._elementwise import add, divide, exp, multiply, sigmoid, subtract
from ._lib._errors import LinAlgError, XlinalgWarning
from ._lib._public import publish as _publish
from ._linalg import QRResult, SVDResult, matmul, qr, solve, svd, svdvals
from ._many import solve_many
from ._version import __version__
from .backends import BACKEND_NAMES, available_backends, backend_of, synchronize, to

__all__ = [
    "BACKEND_NAMES",
    "LinAlgError",
    "QRResult",
    "SVDResult",
    "XlinalgWarning",
    "__version__",
    "add",
    "available_backends",
    "backend_of",
    "divide",
    "exp",
    "matmul",
    "multiply",
    "qr",
    "sigmoid",
    "solve",
    "solve_many",
    "subtract",
    "svd",
    "svdvals",
    "synchronize",
    "to",
]

_publish(__name__, globals())  # xlinalg.LinAlgError, not xlinalg._lib._errors.LinAlgError
