"""Kill the nightly steps graph, consolidate, gaps, maintain and the callout sync at their N-th commit.

After the kill the database passes `PRAGMA integrity_check`, its notes agree with the vault's
files, and running the step again leaves the same database as one clean run of the step
(every table that describes the vault and its knowledge, without run history and timestamps).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys

import apsw
import pytest

from mindtui.config import load_settings
from mindtui.jobs.runner import JOBS, run_job

from conftest import NOT_THE_STATE, SAMPLE_VAULT, run_import

# `mindtui --job nightly --steps STEP` in a child that SIGKILLs itself at the N-th commit counted
# from the moment the armed function starts (the step's own start, or the callout sync inside the
# import step). "before": in the commit hook, so the N-th transaction is lost; "after": in the WAL
# hook, right after the N-th commit is durable. N = 0 kills nothing and prints both counts.
# Counting the step's own commits makes the kill land at the same point on any machine.
STEP_KILLED_AT = """
import json, os, signal, sys
import apsw
from mindtui.config import load_settings
from mindtui.jobs.runner import run_job
from mindtui.knowledge import callout_sync
from mindtui.store import jobs as job_store

step, arm, when, at, db, vault = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
counts = {"before": 0, "after": 0}
armed = [False]

def seen(kind):
    if armed[0]:
        counts[kind] += 1
        if kind == at and counts[kind] == when:
            os.kill(os.getpid(), signal.SIGKILL)

def install(conn):
    conn.set_commit_hook(lambda: seen("before") or False)  # False: the commit goes ahead
    conn.set_wal_hook(lambda conn, name, pages: seen("after") or apsw.SQLITE_OK)

def arming(original):
    def wrapper(*args, **kwargs):
        result = original(*args, **kwargs) if arm == "step" else None
        armed[0] = True
        return result if arm == "step" else original(*args, **kwargs)
    return wrapper

apsw.connection_hooks.append(install)
# PRAGMA wal_autocheckpoint (the import sets it while it writes notes, and back after) installs
# SQLite's own WAL hook in place of the one above: put ours back each time.
import contextlib
from mindtui.store import batch
pragma_while = batch.pragma_while
@contextlib.contextmanager
def pragma_keeping_hooks(conn, name, value):
    with pragma_while(conn, name, value) as same:
        install(conn)
        yield same
    install(conn)
batch.pragma_while = pragma_keeping_hooks
if arm == "step":
    job_store.start_step = arming(job_store.start_step)  # armed once the step's job_runs row is in
else:
    callout_sync.sync_callouts = arming(callout_sync.sync_callouts)
result = run_job("nightly", load_settings(), db_path=db, vault=vault, steps=[step])
assert result.ok, result.as_dict()
print(json.dumps(counts))
sys.exit(3 if when else 0)  # 3: the step ended before the kill point
"""

# step -> (the steps run before it, the step that holds it, what arms the count)
STEPS = {"graph": (["import"], "graph", "step"),
         "consolidate": (["import", "graph"], "consolidate", "step"),
         "gaps": (["import", "graph", "consolidate"], "gaps", "step"),
         "maintain": (["import", "graph", "consolidate", "gaps"], "maintain", "step"),
         "callouts": ([], "import", "callouts")}
VOLATILE_TABLES = {"job_runs"}  # run history
VOLATILE_COLUMNS = {"run_id", "batch_id", "valid_from", "stale_since"}  # and every *_at: when, not what


def run_step(db, vault, step: str, arm: str, when: int = 0, at: str = "after") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", STEP_KILLED_AT, step, arm, str(when), at, str(db), str(vault)],
                          capture_output=True, text=True, timeout=300)


def fingerprint(db) -> dict[str, list[tuple]]:
    """Every row of every ordinary table but the run history, sorted; of a time or a run id only
    whether it is set."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out = {}
        tables = [name for schema, name, kind, *_ in conn.execute("PRAGMA table_list")
                  if schema == "main" and kind == "table" and not name.startswith("sqlite_")]
        for table in sorted(set(tables) - VOLATILE_TABLES):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            # a time or run id counts only by whether it is set
            shown = [f"{c} IS NULL" if c.endswith("_at") or c in VOLATILE_COLUMNS else c for c in columns]
            rows = conn.execute(f"SELECT {', '.join(shown)} FROM {table}").fetchall()
            out[table] = sorted((r for r in rows if table != "meta" or r[0] not in NOT_THE_STATE), key=repr)
        return out
    finally:
        conn.close()


def integrity(db) -> str:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()


def copy_db(source, target) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if source.with_name(source.name + suffix).exists():
            shutil.copy(source.with_name(source.name + suffix), target.with_name(target.name + suffix))


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Per step: the sample vault, the database as the nightly leaves it before the step, the
    database after one clean run of the step, and the step's commit counts. Built once for the
    module, under an environment as isolated as conftest's (which is per test)."""
    root = tmp_path_factory.mktemp("steps")
    with pytest.MonkeyPatch.context() as environment:
        isolate(environment, root / "home")
        yield build_states(root)


def isolate(environment: pytest.MonkeyPatch, home) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("MINDTUI_"):
            environment.delenv(name)
    home.mkdir()
    (home / "empty.yaml").write_text("", encoding="utf-8")
    environment.setenv("MINDTUI_CONFIG_FILE", str(home / "empty.yaml"))
    for name, folder in (("MINDTUI_DATA_DIR", "data"), ("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "share")):
        environment.setenv(name, str(home / folder))


def build_states(root) -> dict:
    vault = root / "vault"
    shutil.copytree(SAMPLE_VAULT, vault, symlinks=True)
    out = {}
    for name, (earlier, step, arm) in STEPS.items():
        before = root / name / "before.db"
        if earlier:
            result = run_job("nightly", load_settings(), db_path=before, vault=vault, steps=earlier)
            assert result.ok, result.as_dict()
        clean = root / name / "clean.db"
        copy_db(before, clean)
        done = run_step(clean, vault, step, arm)
        assert done.returncode == 0, done.stderr
        out[name] = (vault, before, fingerprint(clean), json.loads(done.stdout.splitlines()[-1]))
    return out


def differing(got: dict, expected: dict) -> dict:
    """The tables whose rows differ, with the rows only one side has (what a failure shows)."""
    out = {}
    for table in sorted(set(got) | set(expected)):
        mine, theirs = got.get(table, []), expected.get(table, [])
        if mine != theirs:
            out[table] = {"only after the kill": [r for r in mine if r not in theirs][:5],
                          "only in the clean run": [r for r in theirs if r not in mine][:5]}
    return out


@pytest.mark.parametrize("at", ["before", "after"])
@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("name", list(STEPS))
def test_a_step_killed_at_a_commit_then_rerun_equals_one_clean_run(prepared, tmp_path, name, position, at):
    vault, before, clean, counts = prepared[name]
    _earlier, step, arm = STEPS[name]
    total = counts[at]
    assert total >= 2  # the step commits its work and its job_runs row
    when = {"first": 1, "middle": (total + 1) // 2, "last": total}[position]
    crashed = tmp_path / "crashed.db"
    copy_db(before, crashed)
    killed = run_step(crashed, vault, step, arm, when, at)
    assert killed.returncode == -signal.SIGKILL, f"not killed at commit {when} of {total}: {killed.stderr}"
    assert integrity(crashed) == "ok"

    rerun = run_step(crashed, vault, step, arm)  # the next night
    assert rerun.returncode == 0, rerun.stderr
    assert differing(fingerprint(crashed), clean) == {}
    again = run_import(crashed, vault)  # the notes agree with the vault's files: nothing to import
    assert (again.notes_added, again.notes_changed, again.notes_deleted) == (0, 0, 0)


def test_every_step_of_the_nightly_but_embed_is_killed_here():
    """embed has its own kill test (test_embedder_real), import its own (test_crash_safety)."""
    assert {step for _earlier, step, _arm in STEPS.values()} | {"embed"} == set(JOBS["nightly"])
