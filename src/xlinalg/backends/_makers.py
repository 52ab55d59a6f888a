"""The makers of the operations' fast paths, one a library, each bound to its adapter class.

An operation lists its fast paths without naming a library:
``fast_paths(op, np_maker(...), torch_maker(...), jax_maker(...))``
(``xlinalg._dispatch``). Each maker is a :class:`~xlinalg.backends._speed.FastMaker`
that serves only the arrays of its adapter class, and only the array type its
library's kernel takes as it is (``numpy.ndarray``, ``torch.Tensor``, JAX's
concrete array: never a subclass or a tracer), so that a new backend needs no
entry here: its arrays take the checked paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._jax_adapter import JaxAdapter
from ._numpy_adapter import NumPyAdapter
from ._speed import FastMaker
from ._torch_adapter import TorchAdapter

__all__ = ["jax_maker", "np_maker", "torch_maker"]


def np_maker(fn: Callable[..., Any]) -> FastMaker:
    """The maker of an operation's NumPy fast path: `fn` for exactly ``numpy.ndarray``
    (a subclass, a masked array or ``np.matrix``, takes the checked path). A 0-d
    result becomes a NumPy scalar, as the checked path's ``keep_subclass`` makes it
    for plain input (docs/semantics.md, subclasses)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return _np_scalars(fn(*args, **kwargs))

    return FastMaker(NumPyAdapter, lambda ad, cls: call if cls is np.ndarray else None)


def _np_scalars(r: Any) -> Any:
    """`r` with each 0-d ``numpy.ndarray`` (also in a tuple) as a NumPy scalar."""
    t = type(r)
    if t is np.ndarray:
        return r[()] if r.ndim == 0 else r
    if isinstance(r, tuple):
        fields = [_np_scalars(v) for v in r]
        return t(*fields) if hasattr(t, "_fields") else t(fields)
    return r  # MISSING, a scalar already


def torch_maker(build: Callable[[Any], Callable[..., Any]]) -> FastMaker:
    """The maker of an operation's PyTorch fast path: ``build(torch)`` for exactly
    ``torch.Tensor`` (a subclass takes the checked path)."""

    def make(ad: TorchAdapter, cls: type) -> Any:
        return build(ad.torch) if cls is ad.torch.Tensor else None

    return FastMaker(TorchAdapter, make)


def jax_maker(build: Callable[[Any, Any], Callable[..., Any]], *, host_look: bool = False,
              one_device: bool = False) -> FastMaker:
    """The maker of an operation's JAX fast path: ``build(jax, jnp)`` for JAX's
    concrete array type (never a tracer: under ``jax.jit`` the checked path runs).
    `host_look`: the path looks at its result on the host, which it does only where
    every JAX device is a CPU (no transfer, no wait for a device). `one_device`: the
    path takes two arrays, only where JAX has one device (else the checked path
    names a mismatch)."""

    def make(ad: JaxAdapter, cls: type) -> Any:
        if issubclass(cls, ad._tracer):
            return None
        if (host_look or one_device) and ad.fast_device_check:
            return None
        if host_look and not ad._all_cpu:
            return None
        return build(ad.jax, ad.xp)

    return FastMaker(JaxAdapter, make)
