"""The article's claims (its claims in words, docs/sources.md), each judged from the cells: confirmed,
refuted or not measurable here, with the numbers behind the verdict."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from ...bench._findings._fields import (
    find_cell,
    good,
    has_tag,
    is_gpu,
    median,
    section_of,
    size_key,
)
from ...bench._findings._peaks import rates_above_peak
from ...bench._findings._verdicts import cells, ratio
from ...bench._verdict import WITHIN_NOISE, fmt_interval, fmt_ratio, reading
from ._setup import ARTICLE_NUMPY, ARTICLE_TORCH_CPU

__all__ = ["claims"]

Record = dict[str, Any]


def _ratio_text(x: float) -> str:
    return fmt_ratio(x)  # "2230x", never "2.23e+03x"


def _noise_note(used: list[dict[str, Any]]) -> str:
    noisy = [r for r in used if (r.get("time") or {}).get("noisy")]
    if not noisy:
        return ""
    return (f" (but {len(noisy)} of the {len(used)} cells behind it are noisy: "
            "rerun on a quiet machine before relying on it)")



def _claim_small(records: list[Record]) -> Record:
    """1. small matrices: torch-cpu about 15% faster than numpy; judged in the article's
    own setup (NumPy float64 vs torch float32: both libraries' defaults) and in fair
    ones (the same dtype on both), each where the file has the cells."""
    plain = [r for r in records if section_of(r) in ("A1", "A2") and good(r)]
    c1: dict[str, Any] = {"claim": "on small matrices PyTorch-CPU is about 15% faster than NumPy"}
    verdicts, evidence = [], []
    for setup, dt_np, dt_t in (("article's setup (NumPy float64 vs torch float32)",
                                "float64", "float32"),
                               ("fair, float64", "float64", "float64"),
                               ("fair, float32", "float32", "float32")):
        pairs = []
        for case in sorted({r["case"] for r in plain}):
            both = [(a, b) for a in plain for b in plain
                    if a["case"] == b["case"] == case and a["backend"] == ARTICLE_NUMPY
                    and b["backend"] == ARTICLE_TORCH_CPU and a["dtype"] == dt_np
                    and b["dtype"] == dt_t and a["size_label"] == b["size_label"]]
            if dt_np != dt_t and case == "a1_gemm":  # within one run: A12's float32 cast
                one = [(a, b) for a in plain if a["case"] == case and a["backend"] == ARTICLE_NUMPY
                       and a["dtype"] == dt_np
                       for b in [find_cell(records, "a12_precision_float32", ARTICLE_TORCH_CPU, dt_np,
                                       str(a["size_label"]))] if b is not None and good(b)]
                both = one or both
            if both:  # the smallest size of each GEMM case
                pairs.append(min(both, key=lambda p: size_key(p[0])))
        if not pairs:
            continue
        rats = [x for x in (ratio(a, b) for a, b in pairs) if x]  # (None: out of the floats' range)
        if not rats:
            continue
        gm = math.exp(sum(math.log(x[1]) for x in rats) / len(rats))
        ties = sum(1 for x in rats if reading(x[0], x[2]) == WITHIN_NOISE)
        if ties == len(rats) or 0.95 <= gm < 1.05:
            v = "refuted (no difference beyond the noise)"
        elif 1.05 <= gm <= 1.30:
            v = "confirmed"
        elif gm > 1.30:
            v = "refuted (torch-cpu is faster, by much more than 15%)"
        else:
            v = "refuted (NumPy is faster)"
        used = [r for p in pairs for r in p]
        verdicts.append(f"{setup}: {v} ({_ratio_text(gm)}){_noise_note(used)}")
        evidence.append(f"{setup}: " + "; ".join(
            f"{a['case']} {a['size_label']}: numpy/torch-cpu time = {_ratio_text(x[1])} "
            f"{fmt_interval(x[0], x[2])}" for (a, _), x in zip(pairs, rats) if x)
            + f"; geometric mean {_ratio_text(gm)} (>1: torch-cpu faster)")
    if not verdicts:
        c1.update(verdict="not measurable on this machine",
                  evidence="no GEMM cell with both numpy and torch-cpu results")
    else:
        c1.update(verdict=" / ".join(verdicts), evidence=" / ".join(evidence))
    return c1


def _claim_gpu(records: list[Record], env: dict[str, Any]) -> Record:
    """2. large matrices: GPU 20-50x faster (the largest GEMM cell of each case and dtype)."""
    by_cell = cells(records)
    gemm = {k: v for k, v in by_cell.items() if has_tag(next(iter(v.values())), "gemm")}

    def by_size(keys: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        return sorted(keys, key=lambda k: size_key(next(iter(by_cell[k].values()))))

    c2: dict[str, Any] = {"claim": "on large matrices the GPU is 20-50 times faster"}
    gp = []
    for k, by in gemm.items():
        gpus = [b for b in by if is_gpu(b) and good(by[b])]
        if ARTICLE_NUMPY in by and good(by[ARTICLE_NUMPY]) and gpus:
            gp.append(k)
    if not gp:
        ngpu = len(env.get("gpus") or [])
        c2.update(verdict="not measurable on this machine",
                  evidence=(f"no GPU backend in the file ({ngpu} GPU(s) in the header's env)"))
    else:
        per: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
        for k in gp:
            per[(k[0], k[1])].append(k)
        rs: list[tuple[tuple[str, str, str], str, float]] = []
        for ks in per.values():
            k = by_size(ks)[-1]
            rs.extend((k, b, median(by_cell[k][ARTICLE_NUMPY]) / median(by_cell[k][b]))  # type: ignore[operator]
                      for b in by_cell[k] if is_gpu(b) and good(by_cell[k][b]))
        best = max(r for *_, r in rs)
        v = ("confirmed" if 20 <= best <= 50 else
             "refuted (faster by less than 20x)" if best < 20 else
             "refuted (faster by more than 50x)")
        c2.update(verdict=v, evidence="; ".join(
            f"{k[0]} {k[2]} {k[1]}: numpy/{b} time = {_ratio_text(r)}" for k, b, r in rs))
    return c2


def _outcome(r: Record) -> str:
    """A cell's status with why it did not run to the end: next to an out-of-memory claim a
    bare "failed" reads as out of memory, when the cell may have timed out or been skipped."""
    status = str(r.get("status"))
    if status == "failed":
        kind = str((r.get("error") or {}).get("kind") or "error")
        return f"failed ({kind}{'' if kind == 'oom' else ', not out of memory'})"
    if status == "skipped" and r.get("skip_reason"):
        return f"skipped ({r['skip_reason']})"
    return status


def _claim_oom(records: list[Record], env: dict[str, Any]) -> Record:
    """3. NumPy runs out of memory at 2048x4096x8192."""
    c3: dict[str, Any] = {"claim": "NumPy runs out of memory at 2048x4096x8192"}
    mem = env.get("memory_bytes")
    arith = ("operands in float32: A 2048x4096 = 32 MiB, B 4096x8192 = 128 MiB, "
             "C 2048x8192 = 64 MiB (224 MiB in all; float64 doubles that)")
    hits = [r for r in records if r.get("backend") == ARTICLE_NUMPY and has_tag(r, "gemm")
            and str(r.get("size_label")) == "2048x4096x8192"]
    memtxt = f"; this machine has {mem / 2**30:.1f} GiB" if isinstance(mem, (int, float)) else ""
    if not hits:
        c3.update(verdict="refuted by arithmetic (not run here)",
                  evidence=f"{arith}{memtxt}: the claimed sizes in the article are right, "
                           "but they fit in memory many times over")
    else:
        oom = [r for r in hits if r.get("status") == "failed"
               and (r.get("error") or {}).get("kind") == "oom"]
        if oom:
            c3.update(verdict="confirmed", evidence=f"{arith}; numpy cell(s) failed with OOM: "
                      + ", ".join(r["key"] for r in oom) + memtxt)
        else:
            ev = []
            for r in hits:
                m = (r.get("memory") or {}).get("tracemalloc_peak_bytes")
                ev.append(f"{r['key']}: {_outcome(r)}"
                          + (f", peak {m / 2**20:.0f} MiB" if isinstance(m, (int, float)) else ""))
            c3.update(verdict="refuted" if any(good(r) for r in hits) else
                      "not measurable on this machine",
                      evidence=f"{arith}; " + "; ".join(ev) + memtxt)
    return c3


def _claim_layout(records: list[Record]) -> Record:
    """4. non-contiguous operands cost about 2x in matmul (A10's strided/contiguous pairs)."""
    c4: dict[str, Any] = {"claim": "non-contiguous operands cost about 2x in matmul"}
    lay = [r for r in records if section_of(r) == "A10" and good(r)]

    def variant(r: dict[str, Any]) -> str | None:
        # the variant is a size parameter (a10_layout's contiguous=0 is the strided view),
        # else the size's label names it; never the case's name
        params = r.get("params") or {}
        if "contiguous" in params:
            return "contiguous" if params["contiguous"] else "strided"
        text = str(r.get("size_label", "")).lower()
        if any(w in text for w in ("noncontig", "non_contig", "non-contig", "strided",
                                   "::2", "view")):
            return "strided"
        if any(w in text for w in ("contig", "copy", "dense")):
            return "contiguous"
        return None

    grp: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for r in lay:
        kind, t = variant(r), median(r)
        if kind is not None and t is not None:  # (`lay` holds good cells: t always)
            grp[(r["backend"], str(r["dtype"]))][kind] = t
    rat = [(b, d, t["strided"] / t["contiguous"]) for (b, d), t in grp.items()
           if "strided" in t and "contiguous" in t]
    if not rat:
        c4.update(verdict="not measurable on this machine",
                  evidence="no A10 cells with both a strided and a contiguous variant")
    else:
        def judge(x: float) -> str:
            return ("confirmed" if 1.6 <= x <= 2.5 else
                    "refuted (costs less than 1.6x)" if x < 1.6 else
                    "refuted (costs more than 2.5x)")

        kinds = {judge(x) for *_, x in rat}
        if len(kinds) == 1:
            v = kinds.pop()
        else:
            v = "mixed: " + "; ".join(f"{judge(x)} for {b} {d}" for b, d, x in rat)
        c4.update(verdict=v + _noise_note(lay), evidence="; ".join(
            f"{b} {d}: strided/contiguous time = {_ratio_text(x)}" for b, d, x in rat))
    return c4


def _claim_rates(records: list[Record], peaks: dict[str, Any]) -> Record:
    """5. GPU utilisation and memory bandwidth: the achieved rates per backend."""
    c5: dict[str, Any] = {"claim": "reported GPU utilisation and memory bandwidth"}
    rates: dict[str, dict[str, float]] = defaultdict(dict)  # backend -> unit -> best
    above = 0
    for r in records:
        if not good(r):
            continue
        tp = r.get("throughput") or {}
        marked = rates_above_peak(r, peaks)
        for unit in ("gflops", "gbs"):
            x = tp.get(unit)
            if unit in marked:
                above += 1  # cache-resident or a lower compute dtype: not the machine's rate
                continue
            if isinstance(x, (int, float)) and x > rates[r["backend"]].get(unit, 0.0):
                rates[r["backend"]][unit] = float(x)
    rates_text = "; ".join(f"{b}: best {d.get('gflops', 0):.1f} GFLOP/s, "
                           f"{d.get('gbs', 0):.1f} GB/s" for b, d in sorted(rates.items()))
    if above and rates_text:
        rates_text += (f" ({above} rate(s) above this machine's peak left out: "
                       "cache-resident data or a lower compute dtype, never the machine's rate)")
    if any(is_gpu(b) for b in rates):
        c5.update(verdict="measured: achieved rates below (compare with the device's spec sheet)",
                  evidence=rates_text)
    else:
        c5.update(verdict="not measurable on this machine (no GPU); CPU rates below",
                  evidence=rates_text or "no cell with a throughput")
    return c5


def claims(records: list[Record], env: dict[str, Any] | None,
           peaks: dict[str, Any]) -> list[Record]:
    """A verdict on each of the article's claims (docs/sources.md), with the numbers."""
    env = env or {}
    return [_claim_small(records), _claim_gpu(records, env), _claim_oom(records, env),
            _claim_layout(records), _claim_rates(records, peaks)]
