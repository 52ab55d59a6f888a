"""The documents' setup: the titles of their sections and the backends that stand for
the article's two libraries."""

from __future__ import annotations

__all__ = ["ARTICLE_NUMPY", "ARTICLE_TORCH_CPU", "SECTION_TITLES"]

#: The documents' sections (the harness titles its own: Calibration, Other).
SECTION_TITLES: dict[str, str] = {
    "Q1": "solve(A, b), n = 5, 1000 calls in a Python loop",
    "Q2": "the same loop under numba @njit",
    "Q3": "solve sweep: runtime against matrix side n",
    "Q4": "many systems: batched solve vs the Python loop",
    "A1": "GEMM matmul(a, b)",
    "A2": "fully-connected layer shapes (GEMM)",
    "A3": "attention-head shapes",
    "A4": "elementwise add, multiply, sigmoid",
    "A5": "broadcast add",
    "A6": "the inefficient-broadcast trap",
    "A7": "SVD",
    "A8": "QR",
    "A9": "batched matmul",
    "A10": "memory layout: non-contiguous vs contiguous operand",
    "A11": "host-device transfer in a hybrid pipeline",
    "A12": "mixed precision GEMM",
    "A13": "operator fusion: eager vs compiled",
    "A14": "einsum in place of a nested loop",
    "A15": "convolution-kernel shapes",
    "Extra": "operations beyond the documents (a case file's; in older results files, the "
             "retired generic cases that repeated Q3, A1 and A4: never counted as a second "
             "winner)",
}


def _article_backend(role: str) -> str:
    """The id of the backend that declares `role` (``Backend.article_role``): the
    registry says which backend stands for each of the article's two libraries."""
    from ...backends import BACKEND_NAMES, get_backend

    for name in BACKEND_NAMES:
        if get_backend(name).article_role == role:
            return name
    raise LookupError(f"no registered backend declares article_role={role!r}: the "
                      "article's tables need one (set it in its xlinalg.backends module)")


#: the backends whose NumPy and PyTorch-CPU columns the article's tables and claims
#: compare (the article's own libraries, declared by the backends themselves)
ARTICLE_NUMPY, ARTICLE_TORCH_CPU = _article_backend("NumPy"), _article_backend("PyTorch CPU")


