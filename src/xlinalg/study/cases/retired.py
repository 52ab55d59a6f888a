"""Cases that were removed because they repeated a document case.

``--cases matmul`` names the case to use instead; the fields are what the cases
declared, for the reports of results files written while they existed.
"""

from __future__ import annotations

from ...bench._cases import RetiredCase, retire_case

__all__: list[str] = []

retire_case(RetiredCase("solve", instead="q3_solve_sweep", section="Extra", tags=("sweep",)))
retire_case(RetiredCase("matmul", instead="a1_gemm", section="Extra", tags=("gemm",)))
retire_case(RetiredCase("sigmoid", instead="a4_sigmoid", section="Extra", units="GB/s",
                        peak="bandwidth"))
