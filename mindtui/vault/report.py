"""What an import reports: counts of what changed, totals of what the store holds, warnings."""

from __future__ import annotations

from dataclasses import dataclass, field

from mindtui.vault.scan import ImportWarning


@dataclass
class ImportReport:
    notes_total: int = 0
    notes_added: int = 0
    notes_changed: int = 0
    notes_deleted: int = 0
    notes_unchanged: int = 0
    notes_renamed: int = 0  # moved or renamed files that kept their note id
    notes_relinked: int = 0  # unchanged notes whose links now resolve differently
    notes_relink_checked: int = 0  # unchanged notes whose links were resolved again (see vault.relink)
    chunks_total: int = 0
    explicit_total: int = 0
    wikilink_total: int = 0
    inline_total: int = 0
    callout_total: int = 0
    frontmatter_total: int = 0
    defaults_total: int = 0
    structure_total: int = 0
    unresolved_total: int = 0
    missing_total: int = 0
    ambiguous_total: int = 0
    out_of_corpus_total: int = 0
    attachment_links_total: int = 0
    files_skipped: int = 0
    seconds: float = 0.0
    warnings: list[ImportWarning] = field(default_factory=list)

    def as_dict(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k != "warnings"}
        data["seconds"] = round(self.seconds, 3)
        data["warnings"] = [w.as_dict() for w in self.warnings]
        return data
