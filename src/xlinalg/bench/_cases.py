"""Benchmark cases: what to time, declared as data.

A :class:`Case` gives its sizes at each scale, a seeded float64 input maker, the
operation (on a :class:`Ctx`), a float64 NumPy reference, flop and byte counts and
its skips; :func:`register_case` adds it (docs/contributing.md, "Recipe 3: add a
benchmark case"; a case file is imported with ``xlinalg bench --case-file FILE``
by the runner and by each worker). Inputs are cast to the run's dtype once on the
host and the reference is computed from the cast values, so the check measures
the backend's rounding, not the cast.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._timer import TimerConfig

__all__ = [
    "DTYPES",
    "HARNESS_SECTIONS",
    "KNOWN_TAGS",
    "OPT_IN_GROUPS",
    "PEAKS",
    "SCALES",
    "STUDY_SECTIONS",
    "UNITS",
    "Case",
    "Ctx",
    "backend_object",
    "backends_lacking",
    "backends_noting",
    "case_names",
    "declare",
    "default_case_names",
    "format_size",
    "get_case",
    "group_case_names",
    "register_case",
    "section_order",
    "unregister_case",
    "valid_section",
]

#: Scales of a run, smallest first.
SCALES: tuple[str, ...] = ("quick", "default", "full")
#: The dtypes a run can ask for.
DTYPES: tuple[str, ...] = ("float64", "float32", "float16", "bfloat16")

Size = int | tuple[int, ...]

#: The figures of merit a case's rate can have.
UNITS: tuple[str, ...] = ("GFLOP/s", "GB/s")
#: Which calibrated peak a case's rate is a fraction of.
PEAKS: tuple[str, ...] = ("arithmetic", "bandwidth", "none")
#: The harness's own sections, in report order after every study's: cases added to a
#: study's (a case file's), the cases that declare none, then the calibration.
HARNESS_SECTIONS: tuple[str, ...] = ("Extra", "Other", "Calibration")
#: What the loaded studies add (:func:`declare`): their sections in report order, the
#: tags their reports read beside the harness's (see :class:`Case`), and their opt-in
#: groups of cases (group -> what it is: a case of a group is not in the default run;
#: ``--cases GROUP`` runs the group's cases, ``--cases NAME`` one of them).
STUDY_SECTIONS: list[str] = []
KNOWN_TAGS: list[str] = ["calibration", "gemm", "stream"]
OPT_IN_GROUPS: dict[str, str] = {}

#: Largest size component a command line may ask for (8 TiB of float64 for a
#: vector: past every machine; larger values would also not fit the results schema).
MAX_SIZE_COMPONENT = 2**40

#: default relative (norm-wise) tolerance per dtype for the correctness check
DEFAULT_RTOL: dict[str, float] = {
    "float64": 1e-10,
    "float32": 1e-4,
    "float16": 1e-2,
    "bfloat16": 5e-2,
}


@dataclass
class Ctx:
    """What an operation sees: the backend and its native namespace.

    Attributes
    ----------
    backend : str
        The backend id, e.g. ``"torch-cpu"``.
    xp : module
        The backend's own namespace: ``numpy``, ``torch``, ``cupy``,
        ``jax.numpy``, ``dask.array`` or ``array_api_strict``.
    xl : module
        :mod:`xlinalg` itself, for cases that time xlinalg's functions.
    dtype : str
        The run's dtype name.
    native_dtype : object
        The dtype object of `xp` for `dtype`.
    size : int or tuple of int
        The size being timed.
    """

    backend: str
    xp: Any
    xl: Any
    dtype: str
    native_dtype: Any
    size: Any

    @property
    def backend_object(self) -> Any:
        """The registered :class:`~xlinalg.backends.Backend` called :attr:`backend`:
        what a case asks (its compiler, its convolution...) instead of testing names."""
        return backend_object(self.backend)


@dataclass
class Case:
    """One benchmark operation.

    Parameters
    ----------
    name : str
        The id used on the command line (``--cases``).
    sizes : mapping of scale -> list of sizes
        Sizes for ``"quick"``, ``"default"`` and ``"full"`` (a missing scale
        falls back to the next smaller one). A size is an int or a tuple of ints.
    setup : callable ``(rng, size) -> tuple of float64 ndarrays``
        Makes the inputs from a seeded ``numpy.random.Generator``. Never timed.
    op : callable ``(ctx, *inputs) -> array``
        The timed operation. Inputs arrive on the backend, in the run's dtype.
    reference : callable ``(*float64 ndarrays) -> ndarray``, optional
        The float64 NumPy result to compare with; ``None``: the result is not checked.
    flops : callable ``size -> float``, optional
        Floating-point operations of one call (for GFLOP/s).
    bytes : callable ``(size, itemsize) -> float``, optional
        Bytes one call must move at least (inputs read + output written, for GB/s).
    doc : str
        One line shown by ``xlinalg bench --list-cases`` and stored with results.
    size_names : tuple of str
        Names of the size's components (``("m", "k", "n")``), for the records.
    dtypes : tuple of str
        The dtypes this case supports; others are recorded as skipped.
    skip : mapping backend -> reason
        Backends this case does not run on, with the reason recorded.
    skip_if : callable ``(backend, dtype, size) -> str | None``, optional
        A finer skip rule; returns the reason or None.
    rtol : mapping dtype -> float, or callable ``(dtype, size) -> float``
        Norm-wise relative tolerance ``max|r - ref| / max|ref|`` of the check.
    build : callable ``ctx -> callable``, optional
        Makes the callable that is timed (e.g. ``jax.jit`` of a function), once
        per cell, untimed; the first call (compilation) is recorded apart. When
        given, `op` is ignored and the built callable is called with the inputs.
    parse_size : callable ``str -> size``, optional
        Parses a ``--sizes`` item; default: ``"64"`` -> 64 and ``"2x3x4"`` -> (2, 3, 4),
        then :attr:`normalize_size`.
    normalize_size : callable ``size -> size``, optional
        Turns a user-given size into the case's form (``64`` -> ``(64, 64, 64)``).
    result_for_check : callable, optional
        Maps the result, brought to the host as NumPy (a tuple for several
        outputs), to what `reference` returns, before the comparison: e.g. the
        singular values of an ``SVDResult``, or ``U @ diag(S) @ Vh`` (signs of
        singular vectors are not unique).
    section : str
        The section the case measures: one a loaded study declares (the documents'
        study: ``"Q1"``..``"Q4"``, ``"A1"``..``"A15"``), or the harness's ``"Extra"``
        (a case beyond the study's, e.g. a case file's), ``"Calibration"`` or
        ``"Other"`` (the default). The report groups cells by it.
    tags : tuple of str
        What the report may rely on beyond the section (:data:`KNOWN_TAGS`):
        ``"calibration"`` (run first; sets the peak named by `peak`), ``"gemm"``
        (a matrix product: a source of the arithmetic peak when a run has no
        calibration), ``"stream"`` (memory-bound: a source of the bandwidth
        peak), and the tags a loaded study's report reads.
    units : str
        The figure of merit of the case's rate: ``"GFLOP/s"`` (arithmetic, the
        default) or ``"GB/s"`` (memory traffic).
    peak : str
        Which calibrated peak the rate is a fraction of: ``"arithmetic"`` (the
        GEMM peak of the compute dtype), ``"bandwidth"`` (the streaming peak) or
        ``"none"``; empty (the default): ``"arithmetic"`` for GFLOP/s,
        ``"bandwidth"`` for GB/s.
    compute_dtype : str
        The dtype the operation computes in when it is not the run's (A12's
        casts); empty: the run's.
    notes : mapping backend -> text
        What a reader must know about a backend's cells (e.g. why a layout
        difference cannot exist there); shown in the report next to them.
    group : str
        An opt-in group (:data:`OPT_IN_GROUPS`): the case is left out of the
        default run and runs when ``--cases`` names it or its group; empty (the
        default): in the default run.
    timing : mapping scale -> mapping
        :class:`~xlinalg.bench.TimerConfig` fields this case's cells take at a
        scale in place of the scale's own (``{"full": {"min_samples": 5}}``): a
        per-point budget for a sweep of many sizes. A timer given to the run
        explicitly (``RunConfig.timer``) is used as it is.
    skip_at : mapping scale -> callable ``(backend, dtype, size) -> str | None``
        A skip rule that holds at one scale only (checked where the run is
        planned; the cell is recorded as skipped with the reason).
    """

    name: str
    sizes: Mapping[str, Sequence[Size]]
    setup: Callable[[np.random.Generator, Any], tuple[np.ndarray, ...]]
    op: Callable[..., Any] | None = None
    reference: Callable[..., Any] | None = None
    flops: Callable[[Any], float] | None = None
    bytes: Callable[[Any, int], float] | None = None
    doc: str = ""
    size_names: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ("float64", "float32")
    skip: Mapping[str, str] = field(default_factory=dict)
    skip_if: Callable[[str, str, Any], str | None] | None = None
    rtol: Mapping[str, float] | Callable[[str, Any], float] | None = None
    build: Callable[[Ctx], Callable[..., Any]] | None = None
    parse_size: Callable[[str], Any] | None = None
    normalize_size: Callable[[Any], Any] | None = None
    result_for_check: Callable[[Any], Any] | None = None
    section: str = "Other"
    tags: tuple[str, ...] = ()
    units: str = "GFLOP/s"
    peak: str = ""
    compute_dtype: str = ""
    notes: Mapping[str, str] = field(default_factory=dict)
    group: str = ""
    timing: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    skip_at: Mapping[str, Callable[[str, str, Any], str | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or any(c in self.name for c in " ,|="):
            raise ValueError(f"case name must be a non-empty word, got {self.name!r}")
        if self.op is None and self.build is None:
            raise ValueError(f"case {self.name!r}: give `op` or `build`")
        unknown = sorted(set(self.sizes) - set(SCALES))
        if unknown:
            raise ValueError(f"case {self.name!r}: unknown scales {unknown}; valid: {SCALES}")
        if not any(self.sizes.get(s) for s in SCALES):
            raise ValueError(f"case {self.name!r}: no sizes")
        if self.units not in UNITS:
            raise ValueError(f"case {self.name!r}: units must be 'GFLOP/s' or 'GB/s', "
                             f"got {self.units!r}")
        if not valid_section(self.section):
            raise ValueError(f"case {self.name!r}: section must be one of "
                             f"{', '.join(STUDY_SECTIONS + list(HARNESS_SECTIONS))} (a "
                             f"study's sections are declared when it is loaded); got "
                             f"{self.section!r}")
        self.tags = tuple(self.tags)
        bad = [x for x in self.tags if x not in KNOWN_TAGS]
        if bad:
            raise ValueError(f"case {self.name!r}: unknown tags {bad}; known: "
                             f"{', '.join(KNOWN_TAGS)}")
        if not self.peak:
            self.peak = "bandwidth" if self.units == "GB/s" else "arithmetic"
        if self.peak not in PEAKS:
            raise ValueError(f"case {self.name!r}: peak must be one of {', '.join(PEAKS)}, "
                             f"got {self.peak!r}")
        if self.group and self.group not in OPT_IN_GROUPS:
            raise ValueError(f"case {self.name!r}: group must be one of {', '.join(OPT_IN_GROUPS)} "
                             f"(or empty: the default run), got {self.group!r}")
        if self.name in OPT_IN_GROUPS:
            raise ValueError(f"case {self.name!r}: the name of an opt-in group (--cases "
                             f"{self.name} runs the group); name the case otherwise")
        for what, rules in (("timing", self.timing), ("skip_at", self.skip_at)):
            unknown = sorted(set(rules) - set(SCALES))
            if unknown:
                raise ValueError(f"case {self.name!r}: {what} names unknown scales {unknown}; "
                                 f"valid: {', '.join(SCALES)}")
        for scale, fields_ in self.timing.items():
            try:
                dataclasses.replace(TimerConfig.for_scale(scale), **fields_)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"case {self.name!r}: timing[{scale!r}] is not a set of timer "
                                 f"fields ({exc})") from None
        bad = [s for s, rule in self.skip_at.items() if not callable(rule)]
        if bad:
            raise ValueError(f"case {self.name!r}: skip_at[{bad[0]!r}] must be a callable "
                             "(backend, dtype, size) -> reason or None")
        if self.compute_dtype and self.compute_dtype not in DTYPES:
            raise ValueError(f"case {self.name!r}: compute_dtype must be one of "
                             f"{', '.join(DTYPES)}, got {self.compute_dtype!r}")

    def timer_at(self, scale: str, timer: Any) -> Any:
        """`timer` (the scale's :class:`~xlinalg.bench.TimerConfig`) with this case's
        `timing` at `scale` applied."""
        fields_ = self.timing.get(scale)
        return dataclasses.replace(timer, **fields_) if fields_ else timer

    def skip_reason_at(self, scale: str, backend: str, dtype: str, size: Any) -> str | None:
        """Why this cell is not run at `scale` by the case's `skip_at` rule, or None."""
        rule = self.skip_at.get(scale)
        return rule(backend, dtype, size) if rule is not None else None

    def describe(self, dtype: str) -> dict[str, Any]:
        """What every result record of this case says about it (cell run in `dtype`):
        ``case_doc``, ``section``, ``tags``, ``units``, ``peak``, ``compute_dtype``."""
        return {"case_doc": self.doc, "section": self.section, "tags": list(self.tags),
                "units": self.units, "peak": self.peak,
                "compute_dtype": self.compute_dtype or dtype}

    def sizes_for(self, scale: str) -> list[Any]:
        """The sizes at `scale` (falling back to the nearest smaller scale that has some)."""
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")
        i = SCALES.index(scale)
        for s in (*SCALES[i::-1], *SCALES[i + 1 :]):
            if self.sizes.get(s):
                return [self.normalize(x) for x in self.sizes[s]]
        return []  # pragma: no cover - __post_init__ forbids it

    def normalize(self, size: Any) -> Any:
        """The canonical form of `size` (ints; tuples for several components)."""
        if isinstance(size, list):
            size = tuple(size)
        if self.normalize_size is not None:
            size = self.normalize_size(size)
        if isinstance(size, tuple):
            return tuple(int(v) for v in size)
        return int(size)

    def parse(self, text: str) -> Any:
        """A size from its command-line (``--sizes``) form: :attr:`parse_size`'s, else
        ``"64"`` -> 64 and ``"2x3x4"`` -> (2, 3, 4); then :attr:`normalize_size`."""
        if self.parse_size is not None:
            return self.normalize(self.parse_size(text))
        parts = text.lower().replace("×", "x").split("x")
        try:
            vals = tuple(int(p) for p in parts)
        except ValueError:
            raise ValueError(
                f"case {self.name!r}: size {text!r} is not an integer or AxB... of integers"
            ) from None
        if any(v < 0 for v in vals):
            raise ValueError(f"case {self.name!r}: size {text!r} has a negative component")
        if any(v > MAX_SIZE_COMPONENT for v in vals) or len(vals) > 8:
            raise ValueError(f"case {self.name!r}: size {text[:60]!r} is out of range (at most "
                             f"8 components of at most 2**40 each)")
        return self.normalize(vals[0] if len(vals) == 1 else vals)

    def skip_reason(self, backend: str, dtype: str, size: Any) -> str | None:
        """Why this cell is not run, or None."""
        if backend in self.skip:
            return self.skip[backend]
        if dtype not in self.dtypes:
            return f"case {self.name!r} supports dtypes {', '.join(self.dtypes)}, not {dtype}"
        be = backend_object(backend)
        missing = be.bench.missing_dtype(dtype) if be is not None else None
        if missing is not None:
            return missing
        return self.skip_if(backend, dtype, size) if self.skip_if is not None else None

    def tolerance(self, dtype: str, size: Any) -> float:
        """The norm-wise relative tolerance of the correctness check."""
        if callable(self.rtol):
            return float(self.rtol(dtype, size))
        if self.rtol is not None and dtype in self.rtol:
            return float(self.rtol[dtype])
        return DEFAULT_RTOL.get(dtype, 1e-2)

    def params(self, size: Any) -> dict[str, int]:
        """`size` as named parameters (``{"m": 128, "k": 256, "n": 512}``)."""
        comps = size if isinstance(size, tuple) else (size,)
        names = self.size_names or (
            ("n",) if len(comps) == 1 else tuple(f"d{i}" for i in range(len(comps)))
        )
        if len(names) != len(comps):
            names = tuple(f"d{i}" for i in range(len(comps)))
        return dict(zip(names, comps))


def backend_object(name: str) -> Any:
    """The registered backend called `name` (its hooks answer the cases' questions),
    or None for a name the registry does not know (the cell then fails on it)."""
    from ..backends import get_backend

    try:
        return get_backend(name)
    except ValueError:
        return None


def backends_lacking(feature: str) -> dict[str, str]:
    """backend id -> why its library lacks `feature` (``Backend.bench.lacks``), for a
    case's ``skip``: each library declares what it lacks, each case what it needs."""
    from ..backends import BACKEND_NAMES, get_backend

    return {b: why for b in BACKEND_NAMES if (why := get_backend(b).bench.lacks.get(feature))}


def backends_noting(topic: str) -> dict[str, str]:
    """backend id -> what to know about its cells of a kind of measurement, `topic`
    (``Backend.bench.notes``), for a case's ``notes``."""
    from ..backends import BACKEND_NAMES, get_backend

    return {b: note for b in BACKEND_NAMES if (note := get_backend(b).bench.notes.get(topic))}


def declare(sections: Sequence[str], tags: Sequence[str], groups: Mapping[str, str]) -> None:
    """Add a study's sections (in report order), tags and opt-in groups to what cases
    may declare: before its cases are registered (:func:`~xlinalg.bench.load_study`).
    Declaring again adds nothing."""
    STUDY_SECTIONS.extend(s for s in dict.fromkeys(sections)
                          if s not in STUDY_SECTIONS and s not in HARNESS_SECTIONS)
    KNOWN_TAGS.extend(t for t in dict.fromkeys(tags) if t not in KNOWN_TAGS)
    OPT_IN_GROUPS.update(groups)


def valid_section(section: object) -> bool:
    """Whether `section` is a section a case can declare (the harness's, or a loaded
    study's: ``"Q3"``, ``"A12"``...)."""
    return isinstance(section, str) and (section in HARNESS_SECTIONS
                                         or section in STUDY_SECTIONS)


def section_order(section: str) -> int:
    """Where a section comes in a report: the studies' in their order, then the
    harness's (added cases, cases without a section, the calibration)."""
    order = [*STUDY_SECTIONS, *HARNESS_SECTIONS]
    return order.index(section) if section in order else len(order)


def format_size(size: Any) -> str:
    """``5`` -> ``"5"``; ``(128, 256, 512)`` -> ``"128x256x512"``."""
    if isinstance(size, (tuple, list)):
        return "x".join(str(int(v)) for v in size)
    return str(int(size))


_CASES: dict[str, Case] = {}


def register_case(case: Case, *, replace: bool = False) -> Case:
    """Add `case` to the registry (``replace=True`` to redefine a name)."""
    if case.name in _CASES and not replace and _CASES[case.name] is not case:
        raise ValueError(f"a case named {case.name!r} is already registered")
    _CASES[case.name] = case
    return case


def unregister_case(name: str) -> None:
    """Remove a case from the registry (tests, plugins); no error if absent."""
    _CASES.pop(name, None)


def get_case(name: str) -> Case:
    """The case called `name`; ValueError listing the valid names otherwise."""
    if name in _CASES:
        return _CASES[name]
    if name in OPT_IN_GROUPS:
        raise ValueError(f"{name!r} is a group of cases ({', '.join(group_case_names(name))}), "
                         f"not one case: --cases {name} runs them all")
    raise ValueError(
        f"unknown case {name!r}; valid cases: {', '.join(case_names())}. A study's cases are "
        "registered when the study is loaded: `import xlinalg.study` for the source documents' "
        "cases (the `xlinalg` command loads it), `--case-file` or `register_case` for your own"
    )


def case_names() -> list[str]:
    """Registered case names, in registration order."""
    return list(_CASES)


def default_case_names() -> list[str]:
    """The cases a run without ``--cases`` runs (calibration ones included): every
    registered case outside the opt-in groups, in registration order."""
    return [n for n, c in _CASES.items() if not c.group]


def group_case_names(group: str) -> list[str]:
    """The cases of the opt-in `group`, in registration order (ValueError naming the
    groups for an unknown one)."""
    if group not in OPT_IN_GROUPS:
        raise ValueError(f"unknown case group {group!r}; groups: {', '.join(OPT_IN_GROUPS)}")
    return [n for n, c in _CASES.items() if c.group == group]
