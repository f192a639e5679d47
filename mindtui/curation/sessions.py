"""Mass-edit cards: a work session that names more notes than graph.max_notes_per_session.

Such a session (renaming a tag in every note, moving a folder) is left out of the change graph:
it says nothing about what belongs together. The owner may include one anyway: the change graph
then uses it (`included_sessions`, read by whoever builds the change graph), and is rebuilt at
once; undo takes it out again. The causes come from the change graph's build (`sources`), so
the kind is refreshed where the change graph is built (the nightly graph step, the service).
"""

from __future__ import annotations

import json

import apsw

from mindtui.config import Settings
from mindtui.curation.kinds import Action, Candidate, EditContext, Kind, Plan, dismiss_plan, subject
from mindtui.store import curation_store
from mindtui.store.curation_store import CurationItem

MASS_EDITS = "mass_edits"  # the source: the change graph report's `mass_edits` entries
OUTSIDE_PREFIX = "path:"  # a change-graph node outside the index (a work log that is not indexed)


class MassEdit(Kind):
    name = "mass_edit"
    family = "sessions"
    needs = (MASS_EDITS,)
    actions = (
        Action("include", "i", "use this session in the change graph after all (rebuilt at once)",
               rebuilds_change_graph=True),
        Action("keep_out", "k", "leave it out of the change graph; this card does not come back"),
    )
    gone_reason = "the session is gone from the work log, or no longer a mass edit"

    def detect(self, conn: apsw.Connection, settings: Settings, sources: dict) -> list[Candidate]:
        limit = settings.graph.max_notes_per_session
        out = []
        for entry in sources[MASS_EDITS]:
            log_id = entry["log_id"]
            payload = {"log": entry["log"], "session": entry["session"], "date": entry.get("date", ""),
                       "notes": entry["notes"], "targets": entry.get("targets", [])}
            # More notes touch more of the change graph: just over the limit 0.3, towards 0.7.
            importance = round(0.3 + 0.4 * (1 - limit / max(entry["notes"], limit)), 4)
            note_id = None if log_id.startswith(OUTSIDE_PREFIX) else log_id
            out.append(Candidate(subject(log=log_id, session=entry["session"]), note_id, payload, importance))
        return out

    def summary(self, item: CurationItem) -> tuple[str, str]:
        p = item.payload
        return (f"{p['log']}: session {p['session']}",
                f"names {p['notes']} notes (more than graph.max_notes_per_session): left out of the change graph")

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "keep_out":
            return dismiss_plan(action, f"session {item.payload['session']} stays out of the change graph")
        return Plan("resolved", {"by": "owner", "action": "include"},
                    f"session {item.payload['session']} is part of the change graph now")


def included_sessions(conn: apsw.Connection) -> set[tuple[str, str]]:
    """(work-log note id, session key) of the mass edits the owner included."""
    keys = (json.loads(item.subject_key) for item in curation_store.items_answered_with(conn, MassEdit.name, "include"))
    return {(key["log"], key["session"]) for key in keys}
