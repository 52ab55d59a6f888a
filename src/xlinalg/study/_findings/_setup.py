"""The documents' setup: the titles of their sections and the backends that stand for
the article's two libraries."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ARTICLE_NUMPY", "ARTICLE_SIDES", "ARTICLE_TORCH_CPU", "SECTION_TITLES", "ArticleSide"]

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


class ArticleSide(NamedTuple):
    """One of the article's two libraries, as the study finds its backend in the registry."""

    #: the article's column (and the side of its claims)
    column: str
    #: the library, as its backends name it (``Backend.library_word``)
    library_word: str
    #: the processor its backend computes on (``Backend.bench.processor_class()``)
    processor: str
    #: how the report's claims name it
    word: str


#: The article's two libraries: its NumPy and PyTorch-CPU columns. The study's own
#: table, read against what each backend declares (never a backend id).
ARTICLE_SIDES = (ArticleSide("NumPy", "NumPy", "cpu", "NumPy"),
                 ArticleSide("PyTorch CPU", "PyTorch", "cpu", "torch"))


def _article_backend(side: ArticleSide) -> str:
    """The id of the one backend of `side`'s library on its processor: the registry
    says which backend stands for each of the article's two libraries."""
    from ...backends import BACKEND_NAMES, get_backend

    found = [n for n in BACKEND_NAMES if get_backend(n).library_word == side.library_word
             and get_backend(n).bench.processor_class() == side.processor]
    if len(found) != 1:
        raise LookupError(f"the article's {side.column!r} column needs one registered backend "
                          f"of library {side.library_word!r} on the {side.processor}, found "
                          f"{found or 'none'}")
    return found[0]


#: the backends whose NumPy and PyTorch-CPU columns the article's tables and claims
#: compare (the article's own libraries, found in the registry)
ARTICLE_NUMPY, ARTICLE_TORCH_CPU = (_article_backend(s) for s in ARTICLE_SIDES)
