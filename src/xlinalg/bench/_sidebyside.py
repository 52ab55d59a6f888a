"""One cell measured on every backend side by side, in rotated rounds.

A *group* is one (case, size, dtype) on every selected backend, each through its
own client (a worker process, :class:`._workerproc.WorkerClient`): **begin**
(prepare and calibrate), **rounds** in rotated order with settling between visits,
**stop** (fixed by the timer), **finish** (check, memory, record); the passes at
the end of the run. The design and its measurements: docs/benchmark.md, "Side by
side". :func:`measure_group` takes the clients, the clock and the load reader as
arguments, so the tests drive it with fakes and a synthetic clock.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ._findings._fields import median
from ._passes import group_verdict, merge_passes, pass_pairs
from ._stats import (
    DEFAULT_LEVEL,
    STARVED_CORES,
    all_pairs,
    classify_stall,
    effective_cores,
    passes_disagree,
    rotation,
    stall_factor,
    starved,
)
from ._timer import TimerConfig
from ._verdict import MARGIN
from ._workerproc import ClientFailure, Pool, WorkerClient, failed_record

__all__ = [
    "GroupResult",
    "Settle",
    "measure_group",
    "process_cpu_ns",
    "run_side_by_side",
]


class Client(Protocol):
    """One backend's side of a group (a worker process, or a fake in the tests).

    Each call returns the worker's reply (the protocol of :mod:`._worker`): "ready",
    "samples", or "result" from :meth:`finish` and from any call when the cell ended
    early (skipped, failed). They raise :class:`ClientFailure` on a time-out or a
    dead worker.
    """

    def begin(self, cell: dict[str, Any], timeout: float | None) -> dict[str, Any]: ...

    def sample(self, timeout: float | None) -> dict[str, Any]: ...

    def finish(self, timeout: float | None) -> dict[str, Any]: ...


FailedRecord = Callable[[dict[str, Any], str, str, float], dict[str, Any]]


@dataclass
class GroupResult:
    """The records of a group (one per backend, in the group's order) and how it ran."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    rounds: dict[str, list[float | None]] = field(default_factory=dict)
    blocks: dict[str, list[list[float]]] = field(default_factory=dict)
    orders: list[list[str]] = field(default_factory=list)
    stop: str = ""
    elapsed_s: float = 0.0


#: Settling before a visit: the other workers of the group together may keep at
#: most SETTLE_BUSY of one core busy over a window of SETTLE_WINDOW_S; the wait
#: ends after SETTLE_MAX_S whatever they do (a worker that never goes idle is
#: the library's own business, and the rotation shares it between the backends).
SETTLE_WINDOW_S = 0.005
SETTLE_BUSY = 0.1
SETTLE_MAX_S = 0.5


def process_cpu_ns(pid: int) -> int | None:
    """CPU nanoseconds used so far by every thread of process `pid` (Linux
    ``/proc/<pid>/task/*/schedstat``, nanosecond resolution); None where unreadable."""
    total, seen = 0, False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[0])
                seen = True
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total if seen else None


class Settle:
    """Wait until given workers have gone idle; return the seconds waited.

    ``settle(backends)`` samples the CPU time of the backends' processes
    (``cpu_ns(backend)``, summed) over windows of SETTLE_WINDOW_S until they
    use less than SETTLE_BUSY of one core, or `max_wait` has passed. Clock,
    sleep and CPU reader are injectable (the tests drive it synthetically).
    """

    def __init__(self, cpu_ns: Callable[[str], int | None], *,
                 clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep,
                 max_wait: float = SETTLE_MAX_S) -> None:
        self.cpu_ns, self.clock, self.sleep, self.max_wait = cpu_ns, clock, sleep, max_wait

    def _used(self, backends: Sequence[str]) -> int | None:
        vals = [self.cpu_ns(b) for b in backends]
        known = [v for v in vals if v is not None]
        return sum(known) if known else None

    def __call__(self, backends: Sequence[str]) -> float:
        t0 = self.clock()
        c0 = self._used(backends)
        if c0 is None:
            return 0.0
        while True:
            w0 = self.clock()
            self.sleep(SETTLE_WINDOW_S)
            c1 = self._used(backends)
            now = self.clock()
            if (c1 is None or (c1 - c0) * 1e-9 <= SETTLE_BUSY * max(now - w0, 1e-9)
                    or now - t0 >= self.max_wait):
                return now - t0
            c0 = c1


def _loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - not POSIX
        return None


def measure_group(
    cells: Mapping[str, dict[str, Any]],
    clients: Mapping[str, Client],
    *,
    timer: TimerConfig,
    failed_record: FailedRecord,
    time_limit: float | None = None,
    margin: float = MARGIN,
    seed: int = 0,
    clock: Callable[[], float] = time.perf_counter,
    loadavg: Callable[[], float | None] = _loadavg,
    settle: Callable[[Sequence[str]], float] | None = None,
) -> GroupResult:
    """Measure one group side by side; return every backend's record, annotated.

    Parameters
    ----------
    cells : mapping backend -> cell
        The group's cells (from :func:`._cell.make_cell`), in the group's order.
    clients : mapping backend -> Client
    timer : TimerConfig
        ``min_samples``/``max_samples`` bound the rounds, ``min_run_time`` is
        the sampled time each backend needs at least, ``max_run_time`` per
        backend is the group's time budget.
    failed_record : callable
        ``failed_record(cell, kind, message, wall_s)``: the record of a cell whose
        client failed.
    time_limit : float, optional
        Seconds each backend may spend on the cell, all its requests together.
    margin, seed
        Of the verdict and the intervals (:func:`._stats.verdict`).
    clock, loadavg
        Injectable for the tests.
    settle : callable, optional
        ``settle(others)`` before each visit: waits until the other active
        backends' workers are idle, returns the seconds waited (:class:`Settle`).
        Time spent settling does not count against the time budget.
    """
    names = list(cells)
    res = GroupResult()
    spent = dict.fromkeys(names, 0.0)
    sampled = dict.fromkeys(names, 0.0)
    wall = dict.fromkeys(names, 0.0)
    cpu = dict.fromkeys(names, 0.0)
    settled = dict.fromkeys(names, 0.0)
    t_group = clock()

    def call(b: str, what: str) -> dict[str, Any] | None:
        """One request; None when the backend is done (its record is in res.records)."""
        left = None if time_limit is None else time_limit - spent[b]
        t0 = clock()
        try:
            if left is not None and left <= 0:
                raise ClientFailure("timeout", f"cell ran past the time limit of {time_limit:g} s")
            client = clients[b]
            reply = (client.begin(cells[b], left) if what == "begin"
                     else client.sample(left) if what == "sample" else client.finish(left))
        except ClientFailure as exc:
            spent[b] += clock() - t0
            res.records[b] = failed_record(cells[b], exc.kind, str(exc), spent[b])
            return None
        spent[b] += clock() - t0
        if reply.get("event") == "result":
            res.records[b] = reply["record"]
            return None
        return reply

    active = [b for b in rotation(names, 0) if call(b, "begin") is not None]
    active = [b for b in names if b in active]
    rounds = res.rounds = {b: [] for b in active}
    blocks = res.blocks = {b: [] for b in active}
    loads = []  # at the start of each round and at the end; None: no load average
    t_rounds = clock()
    r = 0
    while active:
        loads.append(loadavg())
        order = [b for b in rotation(names, r) if b in active]
        res.orders.append(order)
        seen = set()
        for b in order:
            if settle is not None:
                settled[b] += settle([o for o in active if o != b])
            reply = call(b, "sample")
            if reply is None:
                active.remove(b)
                continue
            times = [float(t) for t in reply.get("times") or []]
            blocks[b].append(times)
            rounds[b].append(min(times) if times else None)  # interrupted blocks only grow
            sampled[b] += sum(times) * int(reply.get("number") or 1)
            wall[b] += float(reply.get("wall_s") or 0.0)
            cpu[b] += float(reply.get("cpu_s") or 0.0)
            seen.add(b)
        for b in rounds:
            if b not in seen:
                rounds[b].append(None)
        r += 1
        if not active:
            res.stop = "every backend ended"
            break
        if r >= timer.max_samples:
            res.stop = "max rounds"
            break
        if r >= timer.min_samples and all(sampled[b] >= timer.min_run_time for b in active):
            if len(active) < 2:
                res.stop = "min rounds (one backend)"
                break
            hungry = [b for b in active if starved(b, effective_cores(cpu[b], wall[b]))]
            if hungry:
                # waiting for a CPU most of the time: no verdict can come from these
                # rounds (the times measure the scheduler), and more rounds buy nothing
                res.stop = f"starved: {', '.join(hungry)} below {STARVED_CORES} cores"
                break
            # the rounds a pass has: fixed by the timer (min_samples, min_run_time),
            # never by how narrow an interval got (that biases it narrow); more
            # evidence comes from more passes, in fresh processes
            res.stop = "rounds done"
            break
        if r >= timer.hard_min_samples and clock() - t_rounds - sum(settled.values()) \
                >= timer.max_run_time * max(1, len(active)):
            res.stop = "time budget spent"
            break
    for b in list(active):
        call(b, "finish")
    loads.append(loadavg())
    res.elapsed_s = clock() - t_group
    _annotate(res, names, wall, cpu, [x for x in loads if x is not None], settled,
              margin=margin, seed=seed)
    return res


def _annotate(res: GroupResult, names: Sequence[str], wall: Mapping[str, float],
              cpu: Mapping[str, float], loads: list[float], settled: Mapping[str, float], *,
              margin: float, seed: int) -> None:
    """Add ``side_by_side``, ``ratios`` and ``verdict`` to every record of the group."""
    good = {b: res.rounds[b] for b in res.rounds
            if res.records.get(b, {}).get("status") in ("ok", "unchecked")}
    cores = {b: effective_cores(cpu[b], wall[b]) for b in res.rounds}
    excluded = {b: res.records.get(b, {}).get("status") for b in res.rounds if b not in good}
    v = group_verdict(good, cores, excluded, margin=margin, level=DEFAULT_LEVEL, seed=seed)
    pairs = all_pairs(good, level=DEFAULT_LEVEL, seed=seed)
    load = ({"min": min(loads), "max": max(loads), "mean": sum(loads) / len(loads),
             "samples": len(loads)} if loads else None)
    for b in names:
        rec = res.records.get(b)
        if rec is None:
            continue
        if b in res.rounds:
            rec["side_by_side"] = {
                "backends": list(names),
                "rounds": len(res.orders),
                "order": res.orders,
                "round_s": res.rounds[b],
                "block_s": res.blocks.get(b, []),
                "stop": res.stop,
                "group_elapsed_s": res.elapsed_s,
                "wall_s": wall[b],
                "cpu_s": cpu[b],
                "effective_cores": cores[b],
                "load_avg_1min": load,
                "settle_s": settled[b],
            }
            rec["ratios"] = {o: pairs[(b, o)] for o in good if (b, o) in pairs}
        rec["verdict"] = v


#: Statuses of a first-pass record whose cell gets the second pass.
RECHECKED = ("ok", "unchecked", "wrong")


def first_pass_only(rec: Mapping[str, Any]) -> bool:
    """A side-by-side record of a good result that has not had its second pass."""
    sbs = rec.get("side_by_side")
    return (rec.get("status") in RECHECKED and isinstance(sbs, Mapping)
            and bool(sbs.get("round_s")) and "passes" not in sbs)


def group_key(cell: Mapping[str, Any]) -> tuple[str, str, str]:
    """The group of a cell: (case, dtype, size), measured on every backend together."""
    return (cell["case"], cell["dtype"], cell["size_label"])


def _groups(cells: Sequence[dict[str, Any]]) -> list[dict[str, dict[str, Any]]]:
    """Cells grouped by :func:`group_key`, in plan order; backend -> cell."""
    out: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for c in cells:
        out.setdefault(group_key(c), {})[c["backend"]] = c
    return list(out.values())


def group_timer(group: Mapping[str, Mapping[str, Any]], default: TimerConfig) -> TimerConfig:
    """The timer of a group's rounds and passes: its cells' (a case may change its
    cells' timer at a scale, ``Case.timing``), `default` for cells without one."""
    t = next(iter(group.values()), {}).get("timer")
    return TimerConfig(**t) if isinstance(t, Mapping) else default


def _later_pass_cell(cell: dict[str, Any], rec: dict[str, Any],
                     timer: TimerConfig) -> dict[str, Any]:
    """The cell of a later pass: the calls per sample of the first, the rounds of
    :meth:`TimerConfig.later_pass`, no check and no memory (done in the first)."""
    t = group_timer({"": cell}, timer).later_pass().to_dict()
    t["number"] = (rec.get("time") or {}).get("number") or t.get("number")
    return {**cell, "timer": t, "check": False, "memory": False}


def disagreeing(passes: Sequence[Mapping[str, dict[str, Any]]], *, stall: float) -> bool:
    """Whether a group's passes disagree: the intervals of a pair do not overlap
    between two passes, or a backend's medians lie more than `stall` apart."""
    if passes_disagree(pass_pairs(passes, level=DEFAULT_LEVEL, seed=0)[1]):
        return True
    for b in passes[0]:
        meds = [m for p in passes if (m := median(p.get(b))) is not None]
        if len(meds) > 1 and max(meds) / min(meds) > stall:
            return True
    return False


def _merged(passes: Sequence[dict[str, dict[str, Any]]], ok: Mapping[str, Any],
            config: Any) -> dict[str, dict[str, Any]]:
    """The records that stand for a group after its passes, with ``stall`` on a
    backend whose first two passes lie more than ``--stall-factor`` apart (what
    the third says of it: :func:`._stats.classify_stall`)."""
    meds = {b: [median(p.get(b)) for p in passes] for b in ok}
    off = [b for b, m in meds.items()
           if (f := stall_factor(m[0], m[1])) is not None and f > config.stall_factor]
    merged = merge_passes(passes, margin=config.margin, level=DEFAULT_LEVEL, seed=config.seed)
    for b in off:
        first, rc, now = (meds[b] + [None, None, None])[:3]
        merged[b]["stall"] = {"first_median_s": first, "recheck_median_s": rc,
                              "remeasured_median_s": now, "pass_medians_s": meds[b],
                              "group_off": off,
                              **classify_stall(first, rc, now, threshold=config.stall_factor)}
    return merged


def run_side_by_side(config: Any, todo: list[dict[str, Any]],
                     write_header: Callable[[dict[str, Any]], None], *,
                     start: Callable[[dict[str, Any]], None],
                     emit: Callable[[dict[str, Any]], None],
                     second_pass: Sequence[tuple[dict[str, Any], dict[str, Any]]] = ()) -> None:
    """The isolated run: workers, self-check, groups side by side, recheck, stalls.

    `write_header(selfcheck)` writes the results file's header once the fence
    self-check has run in every worker; `start(cell)` reports a cell about to be
    measured, `emit(record)` appends a finished record. `second_pass` holds the
    (cell, first-pass record) pairs of a resumed run that was stopped before their
    second pass: with the recheck, their groups get it first, as the cells measured
    now get theirs.
    """
    timer = config.timer_config()

    with tempfile.TemporaryDirectory(prefix="xlinalg-bench-") as tmp:
        pool = Pool(config, Path(tmp))

        def worker_cpu_ns(b: str) -> int | None:
            proc = getattr(pool.workers.get(b), "proc", None)
            return process_cpu_ns(proc.pid) if proc is not None else None

        settle = Settle(worker_cpu_ns)
        try:
            write_header(pool.selfcheck() if todo or second_pass else {})

            def measure(group: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
                live = {b: cell for b, cell in group.items() if pool.ensure(b)}
                out = {b: failed_record(cell, "crash", pool.broken[b], 0.0)
                       for b, cell in group.items() if b not in live}
                if live:
                    res = measure_group(live, {b: WorkerClient(pool, b) for b in live},
                                        timer=group_timer(live, timer), failed_record=failed_record,
                                        time_limit=config.time_limit, margin=config.margin,
                                        seed=config.seed, settle=settle)
                    out.update(res.records)
                return {b: out[b] for b in group if b in out}

            # a resumed run's groups whose first pass is in the file already
            before = {c["key"]: rec for c, rec in second_pass}
            measured = [(group, {b: before[c["key"]] for b, c in group.items()})
                        for group in _groups([c for c, _ in second_pass])]
            for group in _groups(todo):
                for cell in group.values():
                    start(cell)
                recs = measure(group)
                for rec in recs.values():
                    emit(rec)
                measured.append((group, recs))

            # The later passes, each in fresh worker processes: what a process keeps
            # for its life (thread placement, memory layout) and what a stretch of
            # the run shares (a neighbour's job) differ between the passes, and the
            # intervals are built from that spread (_stats.combine_passes). Every
            # group gets its timer's min_passes; a group whose passes disagree gets
            # more, up to its max_passes.
            pending = []
            for group, recs in measured:
                ok = {b: r for b, r in recs.items() if median(r) is not None
                      and r.get("status") in RECHECKED}
                if ok and config.recheck:
                    pending.append((group, ok, [recs]))
            k = 1
            while pending:
                k += 1
                pool.close()
                later = []
                for group, ok, passes in pending:
                    for b in ok:
                        start(group[b])
                    passes.append(measure({b: _later_pass_cell(group[b], ok[b], timer)
                                           for b in ok}))
                    gt = group_timer(group, timer)
                    if k < gt.min_passes or (k < gt.max_passes and disagreeing(
                            passes, stall=config.stall_factor)):
                        later.append((group, ok, passes))
                        continue
                    for rec in _merged(passes, ok, config).values():
                        emit(rec)
                pending = later
        except BaseException:  # Ctrl-C, SIGTERM: do not wait for the cells in flight
            pool.close(kill=True)
            raise
        else:
            pool.close()
