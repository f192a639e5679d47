"""The two lock files are always taken in one order: the job lock (<db>.lock), then the curation
answer lock (<db>.curation-lock); never the job lock while this process holds the curation lock
(see jobs.lock). Checked on the paths that take both: an answer that writes a file and is
imported, its undo, and an import that finishes an answer killed before its files."""

from __future__ import annotations

import fcntl
import os

import pytest

from curation_support import nightly, settings_for, write_vault
from mindtui.audience import Audience
from mindtui.curation import actions
from mindtui.jobs.lock import JobLock
from mindtui.jobs.runner import run_job
from mindtui.service import Service


def held_here(path: str) -> bool:
    """Whether a lock on this file is held (a second open file takes no flock a first one holds)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:  # never made yet: nobody holds it
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


@pytest.fixture
def taken(monkeypatch, db_path):
    """Every lock taken in this process, in order, with the other lock's state at that moment."""
    log: list[tuple[str, bool]] = []
    job_file, curation_file = str(db_path) + ".lock", str(db_path) + ".curation-lock"
    acquire, answer_lock = JobLock.acquire, actions._answer_lock

    def job_acquire(self):
        log.append(("job", held_here(curation_file)))
        return acquire(self)

    def curation_lock(conn):
        log.append(("curation", held_here(job_file)))
        return answer_lock(conn)

    monkeypatch.setattr(JobLock, "acquire", job_acquire)
    monkeypatch.setattr(actions, "_answer_lock", curation_lock)
    return log


def test_the_job_lock_is_never_taken_under_the_curation_lock(vault, db_path, taken):
    write_vault(vault)
    settings = settings_for(db_path, vault)
    nightly(settings, vault)
    service = Service(settings, audience=Audience.OWNER)
    try:
        card = next(c for c in service.curation_list("unresolved_link") if c.payload["source_path"] == "Alpha.md")
        taken.clear()
        assert service.curation_resolve(card.item_id, "create").changed_files == ["Fehlt.md"]
        assert service.curation_undo().undone
    finally:
        service.close()
    assert ("job", False) in taken and any(kind == "curation" for kind, _ in taken)
    assert ("job", True) not in taken, taken  # the inversion: the job lock waited for under the curation lock
    taken.clear()
    assert run_job("index", settings, db_path=db_path, vault=vault.root, steps=["import"]).ok
    assert taken == [("job", False), ("curation", True)]  # the import step: job lock first, then curation
