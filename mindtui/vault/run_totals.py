"""What an import run leaves in the store besides the notes: the privacy flags of
privacy.private_paths, the type registry's edge defaults (what an agent's view derives edges
with, store.edges.reference_edges_sql) and the report's totals (kept in meta, so a run that wrote
nothing does not count every reference and edge again)."""

from __future__ import annotations

import json
from typing import Sequence

import apsw

from mindtui.store import edges as edge_store
from mindtui.store import notes as note_store
from mindtui.store.batch import immediate
from mindtui.store.meta import PRIVACY_KEY, get_meta, set_meta
from mindtui.text.globs import excluded_by
from mindtui.vault.report import ImportReport
from mindtui.vault.scan import ImportWarning
from mindtui.vault.types import TypeRegistry

TOTALS_KEY = "import_totals"  # meta: the last run's totals (JSON), with the stamp of the rows it counted


def apply_private_paths(conn: apsw.Connection, private_paths: Sequence[str]) -> bool:
    """notes.private = the note's own flag or a folder in privacy.private_paths; recomputed
    for every note when that setting changed since the last run (then True)."""
    key = "\n".join(private_paths)
    if get_meta(conn, PRIVACY_KEY) == key:
        return False
    changes = [(want, note_id) for note_id, path, declared, private in note_store.privacy_rows(conn)
               if (want := declared or excluded_by(path, private_paths) is not None) != private]
    note_store.set_private(conn, changes)
    set_meta(conn, PRIVACY_KEY, key)
    return True


def store_edge_defaults(conn: apsw.Connection, registry: TypeRegistry) -> None:
    """The registry's edge defaults per type, as the notes' edges were derived with them (a
    changed registry has every note written again)."""
    value = json.dumps({"default_type": registry.default_type,
                        "types": {name: list(t.edge_defaults) for name, t in sorted(registry.types.items())}})
    if get_meta(conn, edge_store.EDGE_DEFAULTS_KEY) != value:
        set_meta(conn, edge_store.EDGE_DEFAULTS_KEY, value)


def store_totals(conn: apsw.Connection, report: ImportReport, wrote: bool) -> None:
    """The report's totals of what the store holds. Counting them reads every reference and
    edge (seconds at 100k notes): a run that wrote none takes those the last run counted, as
    long as the rows it counted are the rows there are (store.notes.corpus_stamp)."""
    stamp = note_store.corpus_stamp(conn)
    cached = json.loads(get_meta(conn, TOTALS_KEY) or "{}")
    if wrote or cached.get("stamp") != stamp:
        cached = {"stamp": stamp, "counts": {**note_store.corpus_counts(conn), **edge_store.edge_counts(conn)}}
        with immediate(conn):
            set_meta(conn, TOTALS_KEY, json.dumps(cached))
    for key, value in cached["counts"].items():
        setattr(report, key, value)
    report.warnings.extend(ImportWarning(p, r) for p, r in note_store.stored_warnings(conn))
