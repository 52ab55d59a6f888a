"""xlinalg: linear algebra written once against the array API standard.

``solve`` (and ``solve_ex``: the solution with the singular mask), ``matmul``, ``svd``, ``qr``, the rest of the array API standard's linalg
extension (``inv``, ``cholesky``, ``det``, ``eigh``, norms, ...), ``lstsq`` and
elementwise functions run on
whichever library owns their inputs (NumPy, PyTorch, CuPy, JAX, Dask,
array-api-strict) with one set of semantics; see ``docs/semantics.md``.
"""

# The operations declare themselves as their modules are imported, and that order is
# the order of the API reference and the capabilities pages (operations()): keep it.
# isort: off
from ._eig import EighResult, EigResult, eig, eigh, eigvals, eigvalsh
from ._elementwise import add, divide, exp, multiply, sigmoid, subtract
from ._factor import cholesky, inv
from ._det import SlogdetResult, det, slogdet
from ._solve import solve
from ._matmul import matmul
from ._orthogonal import QRResult, SVDResult, qr, svd, svdvals
from ._lstsq import LstsqResult, lstsq, matrix_rank, pinv
from ._many import solve_many
from ._norms import matrix_norm, vector_norm
from ._views import diagonal, matrix_transpose, trace
from ._products import cross, matrix_power, outer, tensordot, vecdot
from ._solve_ex import SolveExResult, solve_ex
# isort: on
from ._lib._errors import LinAlgError, XlinalgWarning
from ._lib._public import publish as _publish
from ._version import __version__
from .backends import BACKEND_NAMES, available_backends, backend_of, synchronize, to

__all__ = [
    "BACKEND_NAMES",
    "EigResult",
    "EighResult",
    "LinAlgError",
    "LstsqResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "SolveExResult",
    "XlinalgWarning",
    "__version__",
    "add",
    "available_backends",
    "backend_of",
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "divide",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "exp",
    "inv",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "multiply",
    "outer",
    "pinv",
    "qr",
    "sigmoid",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_many",
    "subtract",
    "svd",
    "svdvals",
    "synchronize",
    "tensordot",
    "to",
    "trace",
    "vecdot",
    "vector_norm",
]

_publish(__name__, globals())  # xlinalg.LinAlgError, not xlinalg._lib._errors.LinAlgError
