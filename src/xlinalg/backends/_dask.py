"""Dask: its adapter (each block handled by NumPy's) and the ``"dask"`` backend."""

from __future__ import annotations

import functools
import importlib
import itertools
import math
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np

from .._lib._errors import LinAlgError
from .._lib._typing import QRMode
from ._adapter import singular_message
from ._base import Adapter, Backend, _module_available
from ._facets import BenchFacet, ConvertFacet, UnrolledFacet, facet
from ._numpy import NUMPY, low_float

__all__ = ["DaskAdapter", "DaskBackend", "require_numpy_chunks"]


class DaskAdapter(Adapter):
    """Dask arrays: each block of a stack is handled by the NumPy adapter.

    The matrix axes are made one chunk each (rechunked if needed); the batch axes
    keep their chunks, so stacks of matrices are processed in parallel blocks.
    Nothing is computed here: a singular member raises :class:`LinAlgError` when
    the result is computed (errors="raise"), with its global batch index.
    """

    library = "Dask"
    stack_call = "dask.array.stack"
    backend_id = "dask"
    lazy = True
    unknown_sizes = True  # x[mask]: NaN sizes until compute_chunk_sizes()
    namespace_linalg = False  # the standard's reductions: any chunks, lazily
    single_device = True

    def __init__(self) -> None:
        import array_api_compat.dask.array as xd
        import dask.array as da

        super().__init__(xd)
        self.da = da

    def device(self, x: Any) -> Any:
        return "cpu"

    def deferred_blocks(self, fn: Callable[..., Any], *arrays: Any) -> Any:
        if len(arrays) == 1:
            return arrays[0].map_blocks(fn, dtype=arrays[0].dtype)
        from dask.array.core import elemwise

        return elemwise(fn, *arrays)

    def describe(self, x: Any) -> str:
        return f"a Dask array of shape {tuple(x.shape)} and dtype {x.dtype}"

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        return self.da.from_array(NUMPY.asarray(obj, None, name))

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x.compute() if hasattr(x, "compute") else x)

    def stack(self, arrays: list[Any], like: Any = None) -> Any:
        # da.stack makes one chunk per array (per system of solve_many): a task per
        # system at every later step. Dask's automatic chunk size groups them; `like`
        # (solve_many's stacked `a`, for its `b`): its chunks along the stack, so that
        # the solve pairs blocks one to one instead of rechunking `b` again
        chunks = "auto" if like is None else like.chunks[0]
        return self.da.stack(arrays, axis=0).rechunk({0: chunks})

    def _core_whole(self, x: Any, ncore: int = 2) -> Any:
        chunks = dict.fromkeys(range(x.ndim - ncore, x.ndim), -1)
        return x.rechunk(chunks) if any(len(c) > 1 for c in x.chunks[-ncore:]) else x

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        return self.map_solve(a, b, vector, errors)

    def map_gufunc(self, kernel: Callable[..., Any], sig: str, x: Any, metas: list[tuple[int, Any]],
                   sizes: dict[str, Any], fn: str) -> Any:
        """``kernel`` (a NumPy function of one stack) over the blocks of `x`
        (:attr:`Adapter.map_gufunc`): the matrix axes made one chunk, the batch
        keeping its chunks; nothing is computed here."""
        require_numpy_chunks(x, fn, "x")
        if any(isinstance(s, float) and math.isnan(s) for s in x.shape[-2:]):
            raise ValueError(
                f"{fn}: `x` is {self.describe(x)}: its matrix axes have an unknown (NaN) size; "
                "call `x.compute_chunk_sizes()` first"
            )
        return self._apply_gufunc(kernel, sig, x, metas, sizes or None)

    def map_members(self, x: Any, kernel: Callable[[np.ndarray, str], np.ndarray], errors: str, fn: str,
                    make_error: Callable[[list[tuple[int, ...]]], Exception]) -> Any:
        """``kernel(block, errors)`` over the blocks of `x` (:attr:`Adapter.map_members`):
        the solve's blockwise machinery (one task a chunk, global member indices), with
        `x` as its own right-hand side, which the kernel does not read."""
        require_numpy_chunks(x, fn, "x")
        return self.map_solve(x, x, False, errors, functools.partial(_one_operand, kernel), make_error)

    def map_solve(self, a: Any, b: Any, vector: bool, errors: str, kernel: Callable[..., Any] | None = None,
                  make_error: Callable[[list[tuple[int, ...]]], Exception] | None = None) -> Any:
        """``kernel(ab, bb, vector, errors)`` (an eager NumPy solve; None: NumPy's
        adapter's) on each block: one task a chunk, as ``da.map_blocks`` of the native call.

        The batch axes keep their chunks (a shared `a` keeps `b`'s, and the other
        way round; where both are chunked, Dask's common refinement); the matrix
        axes are made one chunk each. With ``errors="raise"`` each block checks
        its own members: computing a chunk that holds a singular member raises
        :class:`LinAlgError` naming its global batch index (or what
        ``make_error(global batch indices)`` returns), and computing a slice pays
        only for its chunks.
        """
        da = self.da
        a = self._core_whole(a)
        n = a.shape[-1]
        a_batch = tuple(a.shape[:-2])
        paired: tuple[tuple[int, int], ...] = ()
        require_numpy_chunks(a, "solve", "a")
        require_numpy_chunks(b, "solve", "b")
        if vector:
            b = b.rechunk(-1) if b.numblocks[0] > 1 else b
            chunks = (*a.chunks[:-2], (n,))
        else:
            # both matrix axes whole: a block that held some of b's columns would
            # judge a member singular from them alone (NaN in its other columns makes
            # it "never singular"), and factor `a` once per column block
            b = self._core_whole(b)
            nb = max(a.ndim, b.ndim) - 2
            letters = "abcdefghijklmnopqrstuvw"[:nb]
            ia, ib = letters[nb - (a.ndim - 2):] + "yx", letters[nb - (b.ndim - 2):] + "xz"
            if _unknown(a.chunks[:-2]) or _unknown(b.chunks[:-2]):
                out, paired, b = self._unknown_batch_chunks(a, b, ia, ib, letters)
            else:
                cks, (a, b) = da.core.unify_chunks(a, ia, b, ib)
                out = tuple(cks[c] for c in letters)
            chunks = (*out, (n,), b.chunks[-1])
        meta = np.empty((0,) * len(chunks), a.dtype)
        starts: Any = tuple(_block_starts(c) for c in a.chunks[:-2])
        if sum(len(st) for st in starts if isinstance(st, tuple)) > _SHARED_STARTS:
            # uneven chunks: the starts, one per block, held once in the graph (each
            # task refers to it) rather than copied into every task, which made the
            # graph, pickled task by task for a cluster, grow with the square of the blocks
            from dask import delayed

            starts = delayed(starts, pure=True)
        return da.map_blocks(
            _dask_solve_block, a, b, kernel or _numpy_solve, vector, errors, a_batch,
            starts, len(chunks) - (1 if vector else 2),
            make_error, paired, dtype=a.dtype, chunks=chunks, meta=meta, drop_axis=[a.ndim - 1] if vector else None,
        )

    def _unknown_batch_chunks(self, a: Any, b: Any, ia: str, ib: str,
                              letters: str) -> tuple[tuple[Any, ...], tuple[tuple[int, int], ...], Any]:
        """Output batch chunks where some are unknown (``A[mask]``): blocks pair up one
        to one (each block then checks that its `a` and `b` agree: the pairs of
        axes returned), or broadcast from a single block of size 1. An axis whose
        chunks are known on both sides is rechunked like `a`'s where they differ
        (returned: `b`), as Dask unifies known chunks."""
        out, paired = [], []
        for c in letters:
            ca = a.chunks[ia.index(c)] if c in ia else (1,)
            cb = b.chunks[ib.index(c)] if c in ib else (1,)
            if cb == (1,) or ca == (1,):
                out.append(ca if cb == (1,) else cb)
            elif not _unknown((ca,)) and not _unknown((cb,)):
                if ca != cb:  # (sizes checked equal where the shapes were read)
                    b = b.rechunk({ib.index(c): ca})
                out.append(ca)
            elif len(ca) == len(cb):
                out.append(ca if _unknown((cb,)) else cb)
                paired.append((ia.index(c), ib.index(c)))
            else:
                raise ValueError(
                    f"solve: `a` {self.describe(a)} and `b` {self.describe(b)} have unknown "
                    f"chunk sizes (NaN in .shape) and {len(ca)} against {len(cb)} chunks along "
                    "a batch axis: call .compute_chunk_sizes() on both first"
                )
        return tuple(out), tuple(paired), b

    def _gufunc(self, fn: Any, sig: str, a: Any, nout: int, sizes: dict[str, int], dtypes: Any,
                name: str) -> Any:
        if any(math.isnan(s) for s in a.shape[-2:]):  # (Dask's gufunc needs the factors' sizes)
            raise ValueError(
                f"{name}: `x` is {self.describe(a)}: its matrix axes have an unknown (NaN) size, "
                "which the factors' shapes depend on; call `x.compute_chunk_sizes()` first"
            )
        core = [c.count(",") + 1 for c in sig.split("->")[1].strip("()").split("),(")]
        return self._apply_gufunc(fn, sig, a, list(zip(core, dtypes if nout > 1 else [dtypes])), sizes)

    def _apply_gufunc(self, fn: Any, sig: str, a: Any, metas: list[tuple[int, Any]],
                      sizes: dict[str, Any] | None) -> Any:
        """Dask's ``apply_gufunc`` of `fn` on `a` with its matrix axes whole; `metas`:
        each output's (core ndim, dtype). The meta is given explicitly: dask would
        derive it by casting a sample of `a` (a complex -> real cast warns with
        ComplexWarning)."""
        nb = a.ndim - 2
        m = [np.empty((0,) * (nb + k), dtype=d) for k, d in metas]
        return self.da.apply_gufunc(
            fn, sig, self._core_whole(a), meta=tuple(m) if len(m) > 1 else m[0],
            output_sizes=sizes, allow_rechunk=False,
        )

    def _blocked(self, a: Any) -> Any:
        """A matrix in more than one chunk, its short axis made one chunk, for Dask's
        tall-and-skinny (TSQR) or short-and-fat algorithms; None for stacks, single
        chunks and a matrix that fits one automatic chunk (those run NumPy's call per
        matrix). A matrix chunked along its short side only is split along its long
        side. Unknown row counts (``A[mask]``) count as tall; an unknown column count
        gets its columns merged (where Dask's rechunk names compute_chunk_sizes())."""
        if a.ndim != 2 or a.numblocks == (1, 1):
            return None
        m, n = a.shape
        if not (math.isnan(m) or math.isnan(n)) and math.prod(map(len, self._auto(a, ("auto", "auto")))) == 1:
            return None  # it fits one automatic chunk: NumPy's call, whatever its chunks
        if m < n:  # short-and-fat: one row of blocks, each column block at least m wide
            # (Dask's sfqr refuses narrower); a matrix in one column chunk gets Dask's
            # automatic width, never one piece
            w = a.chunks[1][0] if a.numblocks[1] > 1 else self._auto(a, (m, "auto"))[1][0]
            out = a.rechunk({0: -1, 1: max(w, m)})
        elif a.numblocks[0] == 1 and not math.isnan(m) and not math.isnan(n):  # by columns only: the rows
            out = a.rechunk(self._auto(a, ("auto", n)))  # split, never one piece
        else:
            out = a.rechunk({1: -1})
        return out

    def _auto(self, a: Any, chunks: tuple[Any, ...]) -> tuple[tuple[int, ...], ...]:
        """Dask's automatic chunks of `a`'s shape (its configured chunk size)."""
        return self.da.core.normalize_chunks(chunks, shape=a.shape, dtype=a.dtype)

    def _too_large(self, a: Any, fn: str, what: str, instead: str) -> ValueError:
        k = _kmax(*a.shape)  # the square factor: U or Q of a tall matrix, Vh of a wide one
        square = ("a square array of the longer side (unknown until computed)" if math.isnan(k)
                  else f"a ({k}, {k}) array ({k * k * a.dtype.itemsize / 2**30:.3g} GiB)")
        return ValueError(
            f"{fn}: `x` is {self.describe(a)} in chunks of {a.chunksize}: {what} would be "
            f"{square} in one piece; pass {instead} (Dask's tall-and-skinny "
            "algorithm, the factors chunked along `x`'s long side)"
        )

    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        require_numpy_chunks(a, "svd", "x")
        m, n = a.shape[-2:]
        blocked = self._blocked(a)
        if blocked is not None:
            if full_matrices and m != n:
                raise self._too_large(a, "svd", f"{'U' if not m < n else 'Vh'} with full_matrices=True",
                                      "full_matrices=False")
            # coerce_signs=False: signs are each library's own (docs/semantics.md), and
            # Dask's sign pass reduces over all of U before any block of it is ready
            return tuple(self.da.linalg.svd(self._finite(blocked, "svd"), coerce_signs=False))
        k = _kmin(m, n)
        real = np.empty(0, a.dtype).real.dtype
        um, vn = (m, n) if full_matrices else (k, k)
        u, s, vh = self._gufunc(
            lambda x: NUMPY.svd(x, full_matrices), "(m,n)->(m,p),(k),(q,n)", a, 3,
            {"p": um, "k": k, "q": vn}, [a.dtype, real, a.dtype], "svd",
        )
        return u, s, vh

    def svdvals(self, a: Any) -> Any:
        require_numpy_chunks(a, "svdvals", "x")
        blocked = self._blocked(a)
        if blocked is not None:  # (a compute of S alone culls the tasks of U)
            return self.da.linalg.svd(self._finite(blocked, "svdvals"), coerce_signs=False)[1]
        real = np.empty(0, a.dtype).real.dtype
        k = _kmin(*a.shape[-2:])
        return self._gufunc(NUMPY.svdvals, "(m,n)->(k)", a, 1, {"k": k}, real, "svdvals")

    def _finite(self, a: Any, fn: str) -> Any:
        # each block raises xlinalg's error for NaN/inf (LAPACK's SVD of the
        # combined R factor would raise its own, or return NaN)
        return a.map_blocks(_finite_block, fn, dtype=a.dtype)

    def matmul(self, a: Any, b: Any) -> Any:
        dt = a.dtype
        if dt.kind == "V" and low_float(dt):  # NumPy's blocks would be float32 under a
            f32 = np.dtype(np.float32)        # bfloat16 .dtype: NumPy's rule, said truly
            return self.da.matmul(a.astype(f32), b.astype(f32)).astype(dt)
        return self.da.matmul(a, b)

    def qr(self, a: Any, mode: QRMode) -> tuple[Any, Any]:
        require_numpy_chunks(a, "qr", "x")
        m, n = a.shape[-2:]
        blocked = self._blocked(a)
        if blocked is not None:
            if mode == "complete" and not m <= n:
                raise self._too_large(a, "qr", 'Q with mode="complete"', 'mode="reduced"')
            return tuple(self.da.linalg.qr(blocked))
        k = m if mode == "complete" else _kmin(m, n)
        q, r = self._gufunc(
            lambda x: NUMPY.qr(x, mode), "(m,n)->(m,p),(p,n)", a, 2, {"p": k}, [a.dtype, a.dtype], "qr",
        )
        return q, r

    def sigmoid(self, x: Any) -> Any:
        require_numpy_chunks(x, "sigmoid", "x")
        return x.map_blocks(NUMPY.sigmoid, dtype=x.dtype)


def require_numpy_chunks(x: Any, fn: str, name: str) -> None:
    """Refuse a Dask array whose chunks are not NumPy arrays (CuPy's, sparse): these
    paths run each block through NumPy, which would fail inside the compute."""
    meta = getattr(x, "_meta", None)
    if meta is not None and type(meta) is not np.ndarray:
        kind = f"{type(meta).__module__}.{type(meta).__qualname__}"
        raise TypeError(
            f"{fn}: `{name}` is a Dask array of shape {tuple(x.shape)} whose chunks are {kind}, "
            "not NumPy arrays; xlinalg runs Dask blocks through NumPy. Convert the chunks "
            "first (for CuPy: `x.map_blocks(cupy.asnumpy)`), or pass the library's own array"
        )


def _kmin(m: Any, n: Any) -> Any:
    """min(m, n) where a size may be unknown (NaN): then unknown (Python's min would
    return m for min(m, nan))."""
    return math.nan if math.isnan(m) or math.isnan(n) else min(m, n)


def _kmax(m: Any, n: Any) -> Any:
    return math.nan if math.isnan(m) or math.isnan(n) else max(m, n)


def _finite_block(x: np.ndarray, fn: str) -> np.ndarray:
    if not np.isfinite(x).all():
        raise LinAlgError(f"{fn}: the SVD of `x` did not converge: `x` contains NaN or inf")
    return x


def _unknown(chunks: Any) -> bool:
    return any(math.isnan(c) for cs in chunks for c in cs)


def _numpy_solve(ab: np.ndarray, bb: np.ndarray, vector: bool, errors: str) -> np.ndarray:
    return NUMPY.solve(ab, bb, vector, errors)


def _one_operand(kernel: Callable[[np.ndarray, str], np.ndarray], ab: np.ndarray, bb: np.ndarray,
                 vector: bool, errors: str) -> np.ndarray:
    """:meth:`DaskAdapter.map_members`'s kernel as a solve's: `bb` is `ab` again, unread."""
    return kernel(ab, errors)


#: more block starts than this (uneven chunks) are one task of the graph, not copied into each
_SHARED_STARTS = 32


def _block_starts(chunks: tuple[Any, ...]) -> Any:
    """Where the blocks along one axis start, compactly: the common block size (all
    blocks but the last equal), the starts, or None (unknown). Each task carries it,
    or, past ``_SHARED_STARTS`` starts, refers to one shared copy."""
    if _unknown((chunks,)):
        return None
    if all(c == chunks[0] for c in chunks[:-1]):
        return int(chunks[0])
    return tuple(itertools.accumulate(chunks[:-1], initial=0))


def _dask_solve_block(ab: np.ndarray, bb: np.ndarray, kernel: Callable[..., Any], vector: bool,
                      errors: str, a_batch: tuple[int, ...], starts: tuple[Any, ...], nb_out: int,
                      make_error: Callable[[list[tuple[int, ...]]], Exception] | None,
                      paired: tuple[tuple[int, int], ...], block_id: Any = None) -> np.ndarray:
    """One block of :meth:`DaskAdapter.map_solve` (a task on a worker).

    `starts`: :func:`_block_starts` of each batch axis of `a`; `block_id`: this
    block's index in the output, whose last `nb_out` batch axes are `a`'s.
    (``block_id`` rather than ``block_info``: Dask builds the latter for every
    block while the graph is built; the cost is in docs/performance.md.)
    """
    if any(ab.shape[i] != bb.shape[j] for i, j in paired):
        raise ValueError(
            f"solve: a block of `a` of shape {ab.shape} meets a block of `b` of shape "
            f"{bb.shape} (unknown chunk sizes that differ): call .compute_chunk_sizes() on "
            "both first"
        )
    try:
        return kernel(ab, bb, vector, errors)
    except LinAlgError as exc:
        ids = tuple(block_id or ())[nb_out - len(a_batch): nb_out] or (0,) * len(a_batch)
        raise _global_singular(exc, ids, starts, a_batch, make_error) from None


def _global_singular(exc: LinAlgError, ids: tuple[int, ...], starts: tuple[Any, ...],
                     a_batch: tuple[int, ...],
                     make_error: Callable[[list[tuple[int, ...]]], Exception] | None) -> Exception:
    """A block's LinAlgError (indices into the block of `a`, the block at `ids` along
    `a`'s batch axes) with global batch indices."""
    if any(st is None for st in starts):  # unknown chunk sizes: no global index exists
        shown = ", ".join(str(ix if len(ix) > 1 else ix[0]) for ix in exc.indices[:10])
        return LinAlgError(
            f"`a` has a singular matrix at index {shown} of its batch chunk {ids} (unknown "
            "chunk sizes: call .compute_chunk_sizes() for global indices); "
            'pass errors="nan" to get NaN for those members and solutions for the rest',
            indices=exc.indices, members=exc.members,
        )
    # (a broadcast axis of a, of one block, has id 0 whatever the output's block)
    offsets = [0 if n == 1 else (st * i if isinstance(st, int) else st[i])
               for st, i, n in zip(starts, ids, a_batch)]
    indices = [tuple(int(i + o) for i, o in zip(ix, offsets)) for ix in exc.indices]
    members = ([int(np.ravel_multi_index(ix, a_batch)) for ix in indices] if a_batch
               else [0] * len(indices))
    if make_error is not None:
        return make_error(indices)
    note = " (in the chunk computed: Dask checks each chunk as it computes it)"
    return LinAlgError(singular_message(indices, a_batch, note), indices=indices, members=members)


class DaskBench(BenchFacet):
    distributions = (("dask", ("dask",)),)
    uses_dask_scheduler = True
    opt_in = ("chunked arrays for data beyond one machine's memory: on the documents' "
              "single-machine sizes it times NumPy plus a scheduler (docs/dask.md has "
              "its own benchmark)")
    numpy_buffers = True
    extra_float_dtypes = ("float16",)
    lacks = MappingProxyType({
        "device_transfer": "Dask arrays are graphs over host NumPy chunks: there is no device transfer",
        "conv2d": ("Dask has no convolution (dask.array.map_overlap around NumPy's would "
                   "time NumPy per chunk plus the scheduler)"),
        "square_svd": ("dask.array.linalg.svd needs a single column chunk (tall-and-skinny); "
                       "a square SVD is one NumPy task"),
        "square_qr": ("dask.array.linalg.qr is tall-and-skinny QR (one column chunk); "
                      "a square QR is one NumPy task"),
        "batched_solve": "dask.array.linalg.solve is 2-D only (no batched stacks)",
    })
    notes = MappingProxyType({"out": "a lazy graph: the allocating add"})

    def native_namespace(self) -> Any:
        import dask.array as da

        return da

    def native_dtype(self, name: str) -> Any:
        """Dask arrays hold NumPy dtypes."""
        missing = self.missing_dtype(name)
        if missing is not None:
            raise TypeError(missing)
        return getattr(np, name)

    def layout(self, x: Any) -> dict[str, Any]:
        return {"shape": [int(s) for s in x.shape],
                "chunks": [[int(c) for c in ch] for ch in x.chunks]}

    def materialize(self, x: Any) -> Any:
        return x.compute() if hasattr(x, "compute") else x

    def materialize_all(self, outs: Any) -> tuple[Any, ...]:
        import dask

        return tuple(dask.compute(*outs))  # one evaluation: shared tasks run once

    def fence_description(self) -> str:
        return "per call: compute() (Dask graphs are evaluated inside the timed call)"

    def configure(self, *, threads: int | None, allow_tf32: bool) -> Callable[[], None]:
        # a cluster's Client, or the threaded scheduler (_dask_cluster.py)
        from . import _dask_cluster

        return _dask_cluster.configure(threads)

    def settings(self, state: dict[str, Any]) -> None:
        from . import _dask_cluster

        state["dask"] = _dask_cluster.state()  # scheduler, workers, chunking: kept with each result
        state["threads"]["dask_workers"] = state["dask"]["dask_workers"]


class DaskConvert(ConvertFacet):
    numpy_host = True  # NumPy chunks

    def source_error(self, x: Any) -> TypeError | None:
        # a masked chunk's values under the mask would come through np.asarray, and
        # CuPy chunks fail inside it naming nothing
        try:
            require_numpy_chunks(x, "xlinalg.to", "x")
        except TypeError as exc:
            return exc
        return None


class DaskUnrolled(UnrolledFacet):
    layout = "batch-last"
    blockwise = True


class DaskBackend(Backend):
    name = "dask"
    module = "dask"
    install = 'pip install "dask[array]" distributed, or pip install "xlinalg[dask]"'
    lazy = True
    library = "dask"
    adapter_class = DaskAdapter
    namespace_names = ("array_api_compat.dask.array", "dask.array")
    bench = facet(DaskBench)
    convert = facet(DaskConvert)
    unrolled = facet(DaskUnrolled)

    def _probe(self) -> str | None:
        reason = super()._probe()
        if reason is None and not _module_available("dask.array"):
            return "dask is installed without dask.array (pip install 'dask[array]')"
        if reason is None:
            try:
                importlib.import_module("dask.array")
            except Exception as exc:
                return f"importing dask.array failed: {type(exc).__name__}: {exc}"
        return reason

    def from_numpy(self, arr: np.ndarray) -> Any:
        import dask.array as da

        arr = np.array(arr, copy=True)
        # Matrices stay whole in each block; stacks are split along the first axis.
        if arr.ndim >= 3 and arr.shape[0] > 1:
            chunks: Any = (max(1, -(-arr.shape[0] // 4)),) + arr.shape[1:]
        else:
            chunks = arr.shape if arr.size else -1
        return da.from_array(arr, chunks=chunks)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x.compute())

    def owns(self, x: Any) -> bool:
        return type(x).__module__.startswith("dask")

    def synchronize(self, *arrays: Any) -> None:
        # Dask arrays are lazy: "waiting" means evaluating the graph.
        import dask

        if arrays:
            for o in dask.compute(*arrays):  # CuPy blocks: their kernels may still be running
                if type(o).__module__.partition(".")[0] == "cupy":
                    o.device.synchronize()

    def array_types(self) -> tuple[type, ...]:
        import dask.array as da

        return (da.Array,)

    def make_adapter(self) -> Adapter:
        return DaskAdapter()


BACKENDS = (DaskBackend(),)
