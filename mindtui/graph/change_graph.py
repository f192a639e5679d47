"""The change graph: notes worked on in one session of a work log become edges weighted by shared sessions.

Unlike links, this signal spans the whole vault: a note left out of the index (excluded
folder, too large) still takes part, identified by `path:<vault path>`. Sessions that name
more notes than `graph.max_notes_per_session` are mass edits (renaming tags, moving folders):
they are reported and left out, since they say nothing about what belongs together, unless the
owner included one (`include`: (work-log note id, session key), from the curation queue).

Each edge is the pairs' sessions in one work log, and that log is its owner (`owner_note_id`,
rule `change_log:<log id>`): an agent never sees what a log it may not see says, and sees
nothing of a log outside the index (its privacy is unknown: no owner, hidden from agents).
Neighbours add up a pair's edges from several logs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from mindtui.config import Settings
from mindtui.graph.change_log import LogColumns, Session, read_work_log
from mindtui.store import graph_store
from mindtui.store.edges import EdgeRow
from mindtui.vault.resolve import NameIndex, Resolution
from mindtui.text.globs import excluded_by
from mindtui.vault.scan import scan_vault

CHANGE_KIND = "edited_with"
CHANGE_RULE = "change_log"
OUTSIDE_PREFIX = "path:"
EVIDENCE_CHARS = 400


@dataclass
class ChangeGraphReport:
    logs: list[str] = field(default_factory=list)
    sessions: int = 0
    sessions_used: int = 0
    mass_edits: list[dict] = field(default_factory=list)
    mass_edits_included: list[dict] = field(default_factory=list)  # mass edits used because the owner said so
    pairs: int = 0
    outside_notes: int = 0  # notes in pairs that are not indexed
    unresolved: int = 0
    warnings: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {**self.__dict__, "mass_edits_total": len(self.mass_edits)}


def outside_id(path: str) -> str:
    return OUTSIDE_PREFIX + path


def columns_from(settings: Settings) -> LogColumns:
    """The header names of each column ([] turns a column off)."""
    graph = settings.graph
    return LogColumns(graph.session_columns, graph.date_columns, graph.notes_columns)


def change_rule(log_id: str) -> str:
    """The rule id of a work log's change edges (one edge per pair and log)."""
    return f"{CHANGE_RULE}:{log_id}"


def confidence_of(sessions: int) -> float:
    """One shared session is a hint, each further one halves the doubt."""
    return round(1.0 - 0.5 ** sessions, 4)


MASS_EDIT_TARGETS_SHOWN = 20


def seen_namesake(found: Resolution, log_id: str, hidden: set[str]) -> Resolution:
    """A log agents may see names what it would without the notes hidden from them: a name that
    is ambiguous only because hidden notes share it is the one visible namesake (as agents see
    links: store.visibility), so a private `Privat/Emre.md` takes no session from `Personen/Emre.md`."""
    if found.status != "ambiguous" or log_id in hidden:
        return found
    seen = [note_id for note_id in found.candidates if note_id not in hidden]
    if len(seen) != 1:
        return found
    return Resolution("self", log_id) if seen[0] == log_id else Resolution("resolved", seen[0])


def build_change_graph(conn: apsw.Connection, vault: Path, settings: Settings,
                       include: set[tuple[str, str]] = frozenset()) -> ChangeGraphReport:
    report = ChangeGraphReport()
    patterns = settings.graph.work_logs
    limit = settings.graph.max_notes_per_session
    columns = columns_from(settings)

    scan = scan_vault(vault, exclude=[], max_file_bytes=10**12,
                      follow_external_symlinks=settings.import_.follow_external_symlinks)
    names = NameIndex()
    on_disk = {file.path for file in scan.files}
    # Notes deleted or moved since the last import would resolve to stale ids: only what is on disk counts.
    indexed = [ref for ref in graph_store.all_note_refs(conn) if ref.path in on_disk]
    indexed_paths = {ref.path for ref in indexed}
    for ref in indexed:
        names.add_note(ref.note_id, ref.path, ref.aliases)
    hidden = graph_store.hidden_note_ids(conn)
    for file in scan.files:
        if file.path not in indexed_paths:
            names.add_note(outside_id(file.path), file.path, [])
    for path in scan.attachments:
        names.add_attachment(path)
    logs = sorted((f for f in scan.files if excluded_by(f.path, patterns)), key=lambda f: f.path)
    report.logs = [f.path for f in logs]

    shared: dict[tuple[str, str, str], list[Session]] = {}  # (log id, note, note) -> sessions
    for log in logs:
        try:
            text = log.abs_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            report.warnings.append({"path": log.path, "reason": f"cannot read the work log: {exc}"})
            continue
        reading = read_work_log(text, columns, log.path)
        report.warnings.extend({"path": log.path, "reason": w} for w in reading.warnings)
        log_id = next((r.note_id for r in indexed if r.path == log.path), outside_id(log.path))
        for session in reading.sessions:
            report.sessions += 1
            members: list[str] = []
            for target in session.targets:
                found = seen_namesake(names.resolve(target, log_id, log.path), log_id, hidden)
                if found.status == "resolved" and found.note_id not in members:
                    members.append(found.note_id)
                elif found.status in ("missing", "ambiguous"):
                    report.unresolved += 1
                    report.warnings.append({"path": log.path, "reason": f"session {session.key}: [[{target}]] "
                                            f"is {found.status}: {found.detail}"})
            named = len(session.targets)  # what the session names, resolvable or not
            if named > limit:
                mass = {"log": log.path, "log_id": log_id, "session": session.key, "date": session.date,
                        "notes": named, "targets": session.targets[:MASS_EDIT_TARGETS_SHOWN]}
                if (log_id, session.key) not in include:
                    report.mass_edits.append(mass)
                    continue
                report.mass_edits_included.append(mass)
            if len(members) >= 2:
                report.sessions_used += 1
            for first, second in itertools.combinations(sorted(members), 2):
                shared.setdefault((log_id, first, second), []).append(session)

    edges = []
    for (log_id, first, second), sessions in sorted(shared.items()):
        keys = ", ".join(s.key for s in sessions)
        evidence = f"{len(sessions)} session(s): {keys} · {sessions[-1].rows[-1]}"
        owner = None if log_id.startswith(OUTSIDE_PREFIX) else log_id
        edges.append(EdgeRow(CHANGE_KIND, "note", first, second, owner, "signal", change_rule(log_id),
                             confidence_of(len(sessions)), graph_store.CHANGE_SIGNAL, float(len(sessions)),
                             evidence[:EVIDENCE_CHARS]))
    graph_store.replace_change_edges(conn, edges)
    report.pairs = len({(first, second) for _, first, second in shared})
    report.outside_notes = len({n for _, *pair in shared for n in pair if n.startswith(OUTSIDE_PREFIX)})
    return report
