"""The adapters' speed settings are data, declared once (``backends/_speed.py``).

Each library's adapter names its fast paths in its class attribute ``speed``; the
base adapter's constructor is the one place that turns them into what the hot
paths read. No adapter sets a fast-path knob by hand, and an optional native
function (SciPy's ``expit``) is kept in one place, the adapter's ``fast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import xlinalg
from xlinalg.backends import _speed
from xlinalg.backends._adapter import Adapter

SRC = Path(xlinalg.__file__).resolve().parent
#: what the base constructor derives from ``speed``: no other code assigns them
KNOBS = ("fast", "solve_dtypes", "sigmoid_dtypes", "fast_excluded", "fast_excluded_ops",
         "fast_refuses_mixed")


def _knob_assignments(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for t in targets:
            if isinstance(t, ast.Subscript):
                t = t.value  # self.fast["sigmoid"] = ...
            if isinstance(t, ast.Attribute) and t.attr in KNOBS:
                found.append((node.lineno, t.attr))
    return found


@pytest.mark.parametrize("path", sorted(p for p in SRC.rglob("*.py")
                                        if p.name not in ("_adapter.py", "_speed.py")),
                         ids=lambda p: p.relative_to(SRC).as_posix())
def test_no_code_sets_a_fast_path_knob_by_hand(path: Path) -> None:
    found = _knob_assignments(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(SRC)}: {found}: declare it in the adapter's `speed`"


def test_the_knob_scan_sees_each_form() -> None:
    code = ("self.fast = {}\nself.fast['sigmoid'] = f\nself.solve_dtypes: frozenset = x\n"
            "self.fast_excluded |= y\nother.fast = 1\nself.fastest = 2\n")
    assert [a for _, a in _knob_assignments(code)] == ["fast", "fast", "solve_dtypes",
                                                        "fast_excluded", "fast"]


def test_no_module_keeps_its_own_copy_of_expit() -> None:
    # a module's global or an object's attribute holding SciPy's expit would be a
    # second copy (a function's local is not kept)
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(n) for n in tree.body}
        held = [t for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if "expit" in ast.unparse(t)
                and (id(node) in top or isinstance(t, (ast.Attribute, ast.Subscript)))]
        assert not held, (path.relative_to(SRC).as_posix(), [ast.unparse(t) for t in held])


class _Declared(Adapter):
    speed = _speed.FastPaths(
        ops={"add": "numpy.add"},
        optional_ops={"sigmoid": "numpy.negative", "exp": "no_such_package_xl.exp"},
        dtypes_from="numpy", solve_dtypes=("float64",), device_check=False,
        numeric_only=True, excluded_ops={"add": ("complex128",)},
        refuses_mixed=frozenset({"matmul"}),
    )


def test_the_base_constructor_reads_the_declaration_once() -> None:
    import array_api_compat.numpy as xnp

    ad = _Declared(xnp)
    assert ad.fast == {"add": np.add}
    assert ad.solve_dtypes == frozenset({np.dtype("float64")})
    assert ad.sigmoid_dtypes == frozenset({np.dtype("float32"), np.dtype("float64")})
    assert ad.fast_device_check is False
    assert ad.fast_excluded == _speed.NP_NON_NUMERIC
    assert ad.fast_excluded_ops == {"add": frozenset({np.dtype("complex128")})}
    assert ad.fast_refuses_mixed == frozenset({"matmul"})


def test_an_optional_op_joins_fast_on_first_use_or_is_looked_for_once(monkeypatch) -> None:
    import array_api_compat.numpy as xnp

    ad = _Declared(xnp)
    assert "sigmoid" not in ad.fast  # not imported when the adapter is made
    assert ad.optional_op("sigmoid") is np.negative
    assert ad.fast["sigmoid"] is np.negative  # the one place it is kept
    calls = []
    real = _speed.native_function
    monkeypatch.setattr("xlinalg.backends._adapter.native_function",
                        lambda p: calls.append(p) or real(p))
    assert ad.optional_op("exp") is None
    assert ad.optional_op("exp") is None
    assert calls == ["no_such_package_xl.exp"]  # a missing package is looked for once
    assert ad.optional_op("matmul") is None  # neither declared nor optional


def test_every_registered_library_declares_its_speed_as_data() -> None:
    from xlinalg import backends

    for name in backends.BACKEND_NAMES:
        b = backends.get_backend(name)
        cls = b.adapter_class
        assert cls is not None, name
        assert isinstance(cls.speed, _speed.FastPaths), name
        for path in cls.speed.ops.values():
            assert path.partition(".")[0] == b.module, (name, path)  # the library's own
