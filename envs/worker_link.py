"""The handshake of an env manager and its worker processes (``SharedMemoryEnvManager``'s).

Each worker has a slot in shared memory: the manager writes a command there (its kind and the env rows it is for)
and bumps the slot's sequence number; the worker, which spins on that number (yielding its core) for ``spin``
seconds after each command before it sleeps on its pipe, serves it and writes the number back as done. A waiting
manager spins and sleeps the same way. So a step of a worker's envs costs no system call while both sides are
awake, and a wake-up message on the pipe when one sleeps. Pipes carry what does not fit the slot: pickled commands
and replies, each tagged with the sequence number of its command (a late wake-up is told apart and dropped).
"""
from __future__ import annotations

import os
import struct
import time
from multiprocessing.connection import Connection, wait
from typing import Any

import numpy as np

SEQ = struct.Struct('<q')
CMD, DONE, KIND, COUNT, REPLY, ASLEEP = range(6)  # a worker's slot
STEP, STEP_ALL_INFO, MESSAGE = 1, 2, 3            # command kinds: its envs' step (rows in the slot), or a pickle
_NAP = 0.01  # seconds a sleeper waits on its pipe before it looks at the slot again (bounds a missed wake-up)


class Control:
    """The shared slots of ``worker_num`` workers (each for up to ``group_size`` envs), the manager's asleep flag
    and the spin both sides use now (in microseconds: the manager sets it, 0 where the cores are taken)."""

    def __init__(self, ctx: Any, worker_num: int, group_size: int) -> None:
        self.worker_num, self.group_size = worker_num, group_size
        self.slots = ctx.RawArray('q', worker_num * 6 + 2)
        self.rows = ctx.RawArray('H', worker_num * group_size)

    def views(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(slots [worker, 6], the manager's asleep flag [1], the spin [1], rows [worker, group_size])``."""
        flat = np.frombuffer(self.slots, dtype=np.int64)
        rows = np.frombuffer(self.rows, dtype=np.uint16).reshape(self.worker_num, self.group_size)
        return flat[:-2].reshape(self.worker_num, 6), flat[-2:-1], flat[-1:], rows


def _spin(condition: Any, seconds: float) -> bool:
    """Yield the core until ``condition()`` holds or ``seconds`` pass; whether it holds."""
    if condition():
        return True
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        os.sched_yield()
        if condition():
            return True
    return False


def _tagged(message: bytes) -> tuple[int, bytes]:
    return SEQ.unpack_from(message)[0], message[SEQ.size:]


class WorkerEnd:
    """A worker's side: ``next()`` waits for a command, ``reply()`` answers it."""

    def __init__(self, control: Control, worker: int, conn: Connection, last: int) -> None:
        slots, self.manager_asleep, self.spin_us, rows = control.views()
        self.slot, self.rows = slots[worker], rows[worker]
        self.conn, self.last, self.parent = conn, last, os.getppid()

    def _new(self) -> bool:
        return self.slot[CMD] != self.last

    def next(self) -> tuple[int, Any] | None:
        """``(STEP or STEP_ALL_INFO, env rows)`` or ``(MESSAGE, bytes)``; None once the manager's process is gone."""
        slot = self.slot
        if not _spin(self._new, self.spin_us[0] * 1e-6):
            slot[ASLEEP] = 1
            while not self._new():
                if self.conn.poll(_NAP):
                    if not self._new():
                        self.conn.recv_bytes()  # a late wake-up, for a command served already
                elif os.getppid() != self.parent:
                    return None
            slot[ASLEEP] = 0
        self.last = int(slot[CMD])
        kind = int(slot[KIND])
        if kind == MESSAGE:
            return kind, self._message()
        return kind, self.rows[:slot[COUNT]].astype(np.intp)

    def _message(self) -> bytes:
        while True:
            seq, body = _tagged(self.conn.recv_bytes())
            if seq == self.last and body:
                return body

    def reply(self, body: bytes) -> None:
        """Answer the command: ``body`` (b'': nothing beyond the shared columns) and the slot marked done."""
        slot = self.slot
        if body:
            self.conn.send_bytes(SEQ.pack(self.last) + body)  # before done: the manager reads it once done
        slot[REPLY] = 1 if body else 0
        slot[DONE] = self.last
        if not body and self.manager_asleep[0]:
            self.conn.send_bytes(SEQ.pack(self.last))


class ManagerEnd:
    """The manager's side over its workers' ``conns`` (a list it keeps, a worker's entry replaced on a restart)."""

    def __init__(self, control: Control, conns: list) -> None:
        self.slots, self.asleep, self.spin_us, self.rows = control.views()
        self.conns, self.spin = conns, 0.0

    def set_spin(self, seconds: float) -> None:
        """How long both sides spin before they sleep, from the next wait on."""
        self.spin = seconds
        self.spin_us[0] = round(seconds * 1e6)

    def restarted(self, worker: int) -> int:
        """A new worker's start: its slot reset; the sequence number it starts after."""
        slot = self.slots[worker]
        slot[DONE], slot[REPLY], slot[ASLEEP] = slot[CMD], 0, 0
        return int(slot[CMD])

    def post(self, worker: int, kind: int, payload: Any) -> None:
        """Send a worker a command: its env ``rows`` (uint16) for a step, or ``bytes`` for a ``MESSAGE``."""
        slot = self.slots[worker]
        seq = int(slot[CMD]) + 1
        if kind != MESSAGE:
            self.rows[worker, :len(payload)] = payload
            slot[COUNT] = len(payload)
        slot[KIND] = kind
        slot[CMD] = seq
        if kind == MESSAGE:
            self.conns[worker].send_bytes(SEQ.pack(seq) + payload)
        elif slot[ASLEEP]:
            self.conns[worker].send_bytes(SEQ.pack(seq))

    def gather(self, workers: list[int], deadline: float, timeout: float) -> dict[int, tuple[bool, Any]]:
        """Each worker's answer to its last command by ``deadline`` (``time.monotonic()``): ``(True, its reply body,
        b'' where none)``, or ``(False, why)`` where it died or did not answer."""
        slots = self.slots
        seqs = {w: int(slots[w, CMD]) for w in workers}
        answers: dict[int, tuple[bool, Any]] = {}
        bodies: dict[int, bytes] = {}

        def waiting() -> list[int]:  # a reply read is an answer (the worker marks it done just after sending it)
            return [w for w in workers if slots[w, DONE] != seqs[w] and w not in answers and w not in bodies]

        if not _spin(lambda: not waiting(), self.spin):
            self.asleep[0] = 1
            try:
                while (left := waiting()):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        answers.update({w: (False, f"no answer within {timeout:g} s") for w in left})
                        break
                    by_conn = {self.conns[w]: w for w in left}
                    for conn in wait(list(by_conn), timeout=min(_NAP, remaining)):
                        self._read(by_conn[conn], seqs, bodies, answers)
            finally:
                self.asleep[0] = 0
        for w in workers:
            if w in answers:
                continue
            if slots[w, REPLY] and w not in bodies:
                self._read(w, seqs, bodies, answers, until=deadline)
            if w not in answers:
                answers[w] = (True, bodies.get(w, b''))
        return answers

    def _read(self, worker: int, seqs: dict[int, int], bodies: dict[int, bytes], answers: dict,
              until: float | None = None) -> None:
        """Read a worker's pipe: one message (``until`` None), or until the reply to its command."""
        conn = self.conns[worker]
        while True:
            if until is not None and not conn.poll(max(0.0, until - time.monotonic())):
                answers[worker] = (False, "no reply in time")
                return
            try:
                seq, body = _tagged(conn.recv_bytes())
            except (EOFError, OSError):
                answers[worker] = (False, "its process died")
                return
            if seq == seqs[worker] and body:
                bodies[worker] = body
                return
            if until is None:
                return
