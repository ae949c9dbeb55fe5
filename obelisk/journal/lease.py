"""Owning runs: who this process is as an owner (:func:`owner_name`), the runs a journal
holds (:class:`Tenure`), and the thread that renews their leases (:class:`Leases`).

A run is held by one owner at a time. A claim bumps the run's epoch; every append names
the epoch it holds, and the store writes nothing for another one, so an owner that lost
the run (its lease expired and another process took the run over) stops at its next
write. The lease is renewed every third of its length while the run goes on.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid

from obelisk.journal.store import JournalError, RunHeader, RunTakenOver, Store

#: Seconds an owner's lease lasts unless renewed: how long a run whose owner died waits
#: before another process may take it.
DEFAULT_LEASE = 5.0


def owner_name() -> str:
    """This process as an owner: ``host:pid:nonce`` (the nonce tells two journals of one
    process apart)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def dead_here(owner: str) -> bool:
    """True when ``owner`` names a process of this machine that is gone (or a zombie):
    its lease need not be waited for. Another machine's owner is never known dead."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: alive
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False


class Tenure:
    """One run a journal holds: its id and epoch, and the error that ended the hold when
    a renewal found the run taken over (the run's next write raises it)."""

    def __init__(self, run_id: str, epoch: int) -> None:
        self.run_id = run_id
        self.epoch = epoch
        self.lost: JournalError | None = None
        #: The lease ended with the run's last rows (nothing more to write to release it).
        self.released = False

    def check(self) -> None:
        """Raise the error that ended the hold, if one did."""
        if self.lost is not None:
            raise self.lost


class Leases:
    """The runs one journal holds, and the daemon thread that renews their leases every
    third of ``lease`` seconds while any is held."""

    def __init__(self, store: Store, owner: str, lease: float) -> None:
        if not lease > 0:
            raise ValueError(f"a lease must be a positive number of seconds, not {lease!r}")
        self.store = store
        self.owner = owner
        self.lease = lease
        self._held: dict[str, Tenure] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def held(self, run_id: str) -> Tenure | None:
        """The tenure of ``run_id`` when this journal holds it."""
        with self._lock:
            return self._held.get(run_id)

    def claim(self, run_id: str, *, take_over: bool = False) -> Tenure:
        """Claim ``run_id`` (see :meth:`Store.claim`). A run this journal holds already
        is claimed again: the new epoch supersedes the old hold, whose writes the store
        then refuses (a run that stopped by an exception in this process is resumed)."""
        return self.hold(run_id, self.store.claim(run_id, self.owner, self.lease,
                                                  take_over=take_over))

    def create(self, header: RunHeader) -> Tenure | None:
        """A new run, created held by this owner (one write); None when it exists."""
        if not self.store.create_run(header, self.owner, self.lease):
            return None
        return self.hold(header.run_id, 1)

    def hold(self, run_id: str, epoch: int) -> Tenure:
        """Hold ``run_id`` under ``epoch`` (claimed): its lease is renewed from now on."""
        tenure = Tenure(run_id, epoch)
        with self._lock:
            self._held[run_id] = tenure
            if self._thread is None:
                self._wake.clear()
                self._thread = threading.Thread(target=self._renew, daemon=True,
                                                name="obelisk-lease")
                self._thread.start()
        return tenure

    def release(self, tenure: Tenure) -> None:
        """Stop holding the run: its lease ends now, so another process may take it."""
        with self._lock:
            if self._held.get(tenure.run_id) is tenure:
                del self._held[tenure.run_id]
        if tenure.lost is None and not tenure.released:
            with contextlib.suppress(JournalError):  # else the lease expires by itself
                self.store.release(tenure.run_id, tenure.epoch)

    def close(self) -> None:
        """Release every run held, and stop the renewing thread."""
        with self._lock:
            held = list(self._held.values())
        for tenure in held:
            self.release(tenure)
        with self._lock:
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _renew(self) -> None:
        # Renew until nothing is held; a renewal that fails for the store's sake is tried
        # again at the next turn (the run's own writes report a store that stays down).
        while not self._wake.wait(self.lease / 3):
            with self._lock:
                held = list(self._held.values())
                if not held:
                    self._thread = None
                    return
            for tenure in held:
                try:
                    self.store.renew(tenure.run_id, tenure.epoch, self.lease)
                except RunTakenOver as exc:
                    tenure.lost = exc
                    with self._lock:
                        if self._held.get(tenure.run_id) is tenure:
                            del self._held[tenure.run_id]
                except JournalError:
                    continue
