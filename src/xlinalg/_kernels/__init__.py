"""The unrolled kernels' code generator: Gaussian elimination for a fixed ``n``.

The algorithm is written once as straight-line single-assignment code, every
value an array over the batch, and rendered four ways. Nothing here knows a
library: the namespace is passed in. The backends build their kernels from this
package (their ``unrolled_*`` hooks in ``xlinalg.backends``), and the solver
above them (``xlinalg._unrolled``) caches and calls those kernels; this package
imports neither. Its API, the names without a leading underscore of:

* :mod:`._schedule`: the algorithm and two renderers: ``python_function`` (Python
  over a namespace; ``std_namespace(xp)`` makes one), ``c_source`` (a CUDA
  elementwise kernel's body), ``assemble``/``assemble_select`` (the solution
  from its rows), ``op_count``, ``LAYOUTS``, ``MAX_N``, ``GENERATED_PREFIX``;
* :mod:`._build`: what every kernel is made of: ``Kernel``, ``flatten`` (the
  batch as one axis), ``eager_run`` (flatten, solve, assemble), ``make_generic``
  (the standard's functions, eagerly), ``chunks`` (an even split of a batch);
* :mod:`._inplace`: ``inplace_function``, ufunc calls into reused buffers (NumPy);
* :mod:`._numba`: ``make_kernel``, one compiled loop over the batch (numba), from
  the committed ``_numba_generated.py`` (``generated_source`` writes it:
  ``python -m xlinalg._kernels._numba``), ``numba_problem``, ``is_compiled``,
  ``cached_on_disk``.

Callers import a name from its module (``from xlinalg._kernels._build import
flatten``), where a test can replace it.
"""

__all__: list[str] = []
