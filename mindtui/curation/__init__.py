"""The curation queue: cards for what the engine finds (unresolved and ambiguous links, link
suggestions, mass edits), each with its keyboard actions, an undo log and vault writes that are
atomic and only go over the content that was indexed.

`refresh` fills the queue (and closes cards whose cause is gone), `actions.perform` answers a
card, `actions.undo_last` reverses the latest answer. The kinds live in `registry.KINDS`.
"""
