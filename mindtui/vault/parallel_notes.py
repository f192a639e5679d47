"""Changed notes parsed and built on other cores while the importer writes the ones before.

Parsing (YAML, markdown-it) and building a note's rows (chunks, stems, links) is most of a cold
import's CPU time, and needs nothing of the database: a note's rows depend on its file, its
settled id, its previous state and the whole vault's final names, all known before the first
note is written. From PARALLEL_MIN_FILES changed files on, worker processes (one per core but
one, up to four; started fresh, with the reader and the name index once) build the batches in order,
some ahead of the one being written; the importer writes each batch as before, in the same
order and the same transactions, so what a kill leaves is what it left before. The rows and
warnings are the same as built in the importer's own process (tests/test_import_parallel.py
compares the databases). A worker that fails (killed, out of memory) stops the pool: the batches
not built yet are built in the importer's process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Iterable, Iterator

from mindtui.vault.note_reader import Built, NoteReader, NoteTask
from mindtui.vault.resolve import NameIndex

PARALLEL_MIN_FILES = 2_000  # fewer: a worker's start (~0.5 s) costs more than it saves
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
# The importer's process writes (a third of a cold import's CPU) while the workers build: one core
# is left to it. Each worker holds the vault's name index (~350 MB at 100k notes).
WORKERS = max(0, min(4, _CORES - 1))
AHEAD = 2  # batches built ahead per worker (each held until written: memory stays bounded)

_reader: NoteReader | None = None
_names: NameIndex | None = None


def built_batches(reader: NoteReader, names: NameIndex, batches: list[list[NoteTask]],
                  workers: int) -> Iterator[Iterable[Built]]:
    """Each batch's notes built, in order: on `workers` processes (none: here, each note as it
    is taken, so a time budget stops before the next file is parsed). Closing the iterator
    early stops the workers."""
    if workers < 1 or len(batches) < 2:
        yield from ((reader.build(task, names) for task in batch) for batch in batches)
        return
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start, initargs=(reader, names))
    pending: deque[Future] = deque()
    ahead = iter(batches)
    done = 0
    finished = False
    try:
        for batch in _take(ahead, workers * AHEAD):
            pending.append(pool.submit(_build, batch))
        while pending:
            try:
                result = pending.popleft().result()
            except BrokenProcessPool:
                break  # the rest here, below
            done += 1
            for batch in _take(ahead, 1):
                pending.append(pool.submit(_build, batch))
            yield result
        finished = not pending
    finally:
        # All built: the idle workers exit at once (and are waited for); stopped early: they
        # are told to stop and not waited for.
        pool.shutdown(wait=finished, cancel_futures=not finished)
    for batch in batches[done:]:  # only when the pool broke
        yield [reader.build(task, names) for task in batch]


def _take(batches: Iterator[list[NoteTask]], count: int) -> list[list[NoteTask]]:
    return [batch for _, batch in zip(range(count), batches)]


def _start(reader: NoteReader, names: NameIndex) -> None:
    """(worker) Keep what every batch is built with."""
    global _reader, _names
    _reader, _names = reader, names


def _build(batch: list[NoteTask]) -> list[Built]:
    """(worker) One batch's notes."""
    assert _reader is not None and _names is not None
    return [_reader.build(task, _names) for task in batch]
