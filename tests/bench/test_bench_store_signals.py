"""The store defers SIGINT and SIGTERM while it writes a record (issue 34, point 22):
a signal that arrives in the middle of a write takes effect after the whole line
is written and synced, never inside it."""

from __future__ import annotations

import os
import select
import signal
import sys
import threading

import pytest

from xlinalg.bench import ResultStore, _store, cell_key, read_results

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"),
                                reason="POSIX signal masks")


class Terminated(Exception):
    pass


def _record(size: int) -> dict:
    return {"key": cell_key("solve", "numpy", "float64", str(size)), "case": "solve",
            "backend": "numpy", "dtype": "float64", "size": size, "size_label": str(size),
            "status": "ok", "padding": "x" * 5000}


@pytest.fixture
def other_thread():
    """A live thread other than the main one (as OpenBLAS's are in any run), and how
    to send it a signal: the operating system delivers a process's signal to such a
    thread when the main thread blocks it."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    yield t
    stop.set()
    t.join(timeout=30)


def _wait_for_delivery(wakeup_r: int) -> None:
    """Wait until the operating system has delivered the signal to some thread (its
    C-level handler writes to the wakeup fd). A thread-directed signal waits for its
    thread to be scheduled: on a loaded machine that can be after the whole write,
    and the test would see the signal land after the line by chance, not by design."""
    ready, _, _ = select.select([wakeup_r], [], [], 600)
    assert ready, "the signal was never delivered"
    os.read(wakeup_r, 1)


@pytest.mark.parametrize("to", ["process", "other thread"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_a_record_write_lands_after_the_line(tmp_path, monkeypatch, sig, to,
                                                             other_thread):
    assert threading.current_thread() is threading.main_thread()
    path = tmp_path / "r.jsonl"
    seen: list[str] = []

    def _handler(signum, frame):
        seen.append("handler")
        raise Terminated(signal.Signals(signum).name)

    old_handler = signal.signal(sig, _handler)
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_w, False)
    old_wakeup = signal.set_wakeup_fd(wakeup_w)
    try:
        with ResultStore(path) as store:
            store.write_header({}, {})
            fh = store._fh
            real_write, real_fsync = fh.write, os.fsync
            chunks: list[int] = []

            class _SplitWrites:
                """The file object, writing at most 1000 bytes per call (as an OS may),
                with the signal sent to this process before the first chunk."""

                def write(self, data):
                    if not chunks:
                        seen.append("signal sent")
                        if to == "process":
                            os.kill(os.getpid(), sig)
                        else:
                            assert other_thread.ident is not None
                            signal.pthread_kill(other_thread.ident, sig)
                        _wait_for_delivery(wakeup_r)
                    n = real_write(bytes(data[:1000]))
                    seen.append("write")  # (a handler run inside this call comes first)
                    chunks.append(n)
                    return n

                def fileno(self):
                    return fh.fileno()

            def _fsync(fd):
                seen.append("fsync")
                return real_fsync(fd)

            monkeypatch.setattr(store, "_fh", _SplitWrites())
            monkeypatch.setattr(_store.os, "fsync", _fsync)
            with pytest.raises(Terminated, match=signal.Signals(sig).name):
                store.append(_record(5))
            monkeypatch.setattr(store, "_fh", fh)
            monkeypatch.undo()
    finally:
        signal.signal(sig, old_handler)
        signal.set_wakeup_fd(old_wakeup)
        os.close(wakeup_r)
        os.close(wakeup_w)
    # the signal was held while the line was written, and delivered once after it
    assert len(chunks) >= 5, seen  # the record took several write calls
    assert seen == ["signal sent"] + ["write"] * len(chunks) + ["fsync", "handler"], seen
    res = read_results(path)
    assert res.warnings == []
    assert [r["size"] for r in res.records] == [5]  # the whole line, nothing cut
    # the process's mask and handler are as they were before the write
    assert sig not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert signal.getsignal(sig) is old_handler


def test_signals_are_not_deferred_outside_a_write(tmp_path):
    """The deferral is scoped to the write: between records Ctrl-C is immediate."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with ResultStore(tmp_path / "r.jsonl") as store:
        store.write_header({}, {})
        store.append(_record(1))
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        assert {s: signal.getsignal(s) for s in before} == before
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)  # (the default handler: at once)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX")
def test_the_mask_is_restored_when_a_write_fails(tmp_path, monkeypatch):
    with ResultStore(tmp_path / "r.jsonl") as store:
        store.write_header({}, {})

        def _full(*a):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(_store.os, "fsync", _full)
        with pytest.raises(_store.ResultsWriteError, match="No space left"):
            store.append(_record(2))
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
