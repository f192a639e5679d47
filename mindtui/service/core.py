"""The service: the one object every front end (CLI, TUI, MCP) talks to.

Opened on settings and a database for one audience. Reads go through connections opened for
that audience (`store.visibility`: an agent's connection cannot see private notes or notes
with `ai_processing: none`), searches through one engine per pooled connection, models
through the process's model holder. Jobs, model builds and evaluation are owner actions.
Safe to use from several threads at once; `close()` releases connections and models.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from pathlib import Path
from typing import Callable

from mindtui.audience import Audience
from mindtui.config import Settings
from mindtui.errors import InputError, NoteNotFound, NotAllowed
from mindtui.graph.neighbours import GROUPS, find_note, neighbours
from mindtui.graph.stats import graph_stats
from mindtui.jobs.runner import JobHooks, check_job, preload, run_job
from mindtui.knowledge.writer import Decision
from mindtui.models import files as model_files
from mindtui.models.holder import ModelHolder, shared_holder
from mindtui.progress import CancelToken, StepProgress
from mindtui.search.engine import SearchEngine, SearchModels, SearchOptions, SearchResponse
from mindtui.service import views
from mindtui.service.curation import ActionOutcome, Card, CurationDesk
from mindtui.service.fulltext import cached_engine
from mindtui.service.job_process import JobProcess, batch_summary
from mindtui.service.knowledge import KnowledgeDesk, KnowledgeView
from mindtui.service.status_report import as_interrupted, database_status, settled
from mindtui.service.redact import public_explain, redact, redact_value
from mindtui.store import jobs as job_store
from mindtui.store import notes as note_store
from mindtui.store import vectors as vector_store
from mindtui.store.interrupt import stopping_on
from mindtui.store.meta import EMBEDDING_MODEL_KEY, VAULT_KEY, data_version, get_meta
from mindtui.store.pool import ConnectionPool
from mindtui.store.names import is_visible_name
from mindtui.vault.types import TypeRegistry, load_type_registry

Say = Callable[[str], None]


class Service:
    def __init__(self, settings: Settings, *, audience: Audience = Audience.AGENT,
                 models: ModelHolder | None = None) -> None:
        """audience defaults to the restrictive one: a front end that forgets to say gets the agent's view.
        An agent's service never upgrades the database (an out-of-date one is DatabaseError); with
        database.read_only (or a file it cannot write) it reads, and a write is DatabaseError."""
        self.settings = settings
        self.audience = Audience.parse(audience)
        self.db_path = settings.db_path
        self.models = models or shared_holder()
        self.models.acquire()
        self._pool = ConnectionPool(self.db_path, audience=self.audience,
                                    busy_timeout_ms=settings.database.busy_timeout_ms,
                                    private_paths=settings.privacy.private_paths,
                                    agent_history=settings.privacy.agent_uses_history,
                                    read_only=settings.database.read_only)
        self._registry: TypeRegistry | None = None
        self._registry_lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._closed = False

    # -- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._pool.close()
        self.models.release()

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _owner_only(self, what: str) -> None:
        if self.audience is not Audience.OWNER:
            raise NotAllowed(f"{what} is for the owner; this service reads as {self.audience.value}")

    @property
    def registry(self) -> TypeRegistry:
        with self._registry_lock:
            if self._registry is None:
                self._registry = load_type_registry(self.settings.types_file)
            return self._registry

    def _engine(self, pooled, say: Say | None = None) -> SearchEngine:
        # Learnt values are fitted to the owner's opens, private notes' too: never an agent's.
        learns = self.audience is Audience.OWNER
        return cached_engine(pooled, self.settings, learns, lambda: SearchModels(self.models, self.settings, say))

    def _redactor(self) -> "_Redactor":
        """For an agent: text with links to notes it may not see taken out (see service.redact)."""
        return _Redactor(None if self.audience is Audience.OWNER else self._pool)

    # -- reading ---------------------------------------------------------------------------
    def search(self, query: str, options: SearchOptions | None = None,
               cancel: CancelToken | None = None) -> SearchResponse:
        """Hybrid search (or one list) over what the audience may see. `cancel`: a front end that
        no longer wants the answer (a query typed past) stops it; it raises Cancelled then."""
        response = self._search(query, options, cancel)
        if self.audience is not Audience.OWNER:
            for result in response.results:
                result.explain = public_explain(result.explain)
                result.chunk_id = None  # a row id: it counts the chunks of every note ever imported
                result.item_id = self._knowledge.told_id(result.item_id)  # so does an item's (service.item_ids)
        return response

    def _search(self, query: str, options: SearchOptions | None = None,
                cancel: CancelToken | None = None) -> SearchResponse:
        """search() with the results' chunk ids and raw explain, for the service's own use."""
        with self._pool.connection() as pooled, stopping_on(pooled.conn, cancel):
            clean = self._redactor()
            response = self._engine(pooled).search(query, options or SearchOptions(), text_filter=clean)
        if cancel is not None:
            cancel.check()  # a stage that gives a notice for a failure may have taken the interrupt
        return response

    def search_count(self, query: str, options: SearchOptions | None = None, at_most: int | None = None,
                     cancel: CancelToken | None = None) -> int:
        """How many notes the query's words match, with the options' filters (a front end shows
        "20 of 3,412"): full text only, as the audience may see them. `at_most`: counting stops
        past it and answers at_most + 1 ("20 of 10,000+"; a word in most of a million chunks)."""
        with self._pool.connection() as pooled, stopping_on(pooled.conn, cancel):
            return self._engine(pooled).count(query, options or SearchOptions(), at_most)

    def note(self, name: str, *, with_chunks: bool = True) -> views.NoteView:
        """A note by path, title, alias or id: its facts, its text (from the vault file when it
        still matches the index) and its chunks. NoteNotFound for a note the audience may not see."""
        view = self._note(name, with_chunks)
        view.chunks = self._as_seen(view.chunks)
        return view

    def note_chunks(self, name: str) -> list:
        """A note's chunks alone, as note() gives them (a front end shows the text first and fetches
        these after it: a 5 MB note has 10,000)."""
        with self._pool.connection() as pooled:
            chunks = note_store.note_chunks(pooled.conn, find_note(pooled.conn, name).note_id)
            clean = self._redactor()
        return self._as_seen(_cleaned_chunks(chunks, clean))

    def _as_seen(self, chunks: list) -> list:
        if self.audience is Audience.OWNER:
            return chunks
        return [dataclasses.replace(chunk, chunk_id=None) for chunk in chunks]  # row ids count every note's chunks

    def _note(self, name: str, with_chunks: bool = True) -> views.NoteView:
        """note() with the chunks' ids, for the service's own use."""
        with self._pool.connection() as pooled:
            ref = find_note(pooled.conn, name)
            record = note_store.load_note(pooled.conn, ref.note_id)
            vault_root = get_meta(pooled.conn, VAULT_KEY)
            clean = self._redactor()
            view = views.note_view(record, lambda: note_store.note_chunks(pooled.conn, ref.note_id), vault_root,
                                   with_chunks, file_if_changed=self.audience is Audience.OWNER)
        view.text = clean(view.text)
        view.frontmatter = clean.value(view.frontmatter)
        view.aliases = clean.value(view.aliases)
        view.chunks = _cleaned_chunks(view.chunks, clean)
        return view

    def neighbours(self, name: str, groups: tuple[str, ...] = GROUPS) -> views.NeighboursView:
        unknown = [g for g in groups if g not in GROUPS]
        if unknown:
            raise views.UnknownSignal(f"unknown signal(s) {', '.join(unknown)}; choose from {', '.join(GROUPS)}")
        with self._pool.connection() as pooled:
            ref = find_note(pooled.conn, name)
            found = neighbours(pooled.conn, self.settings, ref, self.registry.symmetric_relations, tuple(groups))
            clean = self._redactor()
        for entries in found.values():
            for entry in entries:
                entry.evidence = clean(entry.evidence)
        return views.NeighboursView(ref.note_id, ref.path, ref.title, found)

    def context_pack(self, note: str | None = None, query: str | None = None, *, budget_tokens: int = 2000,
                     limit: int = 5, signals: tuple[str, ...] | None = None, knowledge: bool = True) -> dict:
        """The best notes for a note or a query, their typed neighbours, confirmed knowledge and text,
        cut to `budget_tokens` (see service.context)."""
        from mindtui.service.context import TYPED_SIGNALS, build_context_pack

        return build_context_pack(self, note=note, query=query, budget_tokens=budget_tokens, limit=limit,
                                  signals=tuple(signals or TYPED_SIGNALS), knowledge=knowledge)

    def record_search(self, query: str, mode: str, note_ids: list[str]) -> list[str]:
        """Log a search that ran with `log=False` once its user acted on the results (the TUI
        searches on every keystroke but teaches the search graph only the query a note was
        opened from). Returns notices (a failed log never raises)."""
        with self._pool.connection() as pooled:
            return self._engine(pooled).record(query, mode, note_ids)

    def record_open(self, query: str, mode: str, results: list[str], opened: str, how: str,
                    search_id: int | None = None):
        """The owner opened `opened` (a note name or id) after a search whose shown results were
        `results` (note ids, best first): enter (TUI Enter), copy (`y`), follow (a link followed from
        it), cli (`search --opened`). Logs the search first unless `search_id` is its entry. Usage
        memory learns from it (README "Usage memory"). Returns a service.usage.OpenRecorded."""
        self._owner_only("recording what was opened")
        from mindtui.service import usage

        with self._pool.connection() as pooled:
            return usage.record_open(self._engine(pooled), pooled.conn, query, mode, results, opened, how,
                                     search_id)

    def usage_forget(self, *, query: str | None = None, note: str | None = None, before: str | None = None,
                     everything: bool = False) -> dict:
        """`mindtui usage forget`: searches (with their opens and the search pairs they taught) by
        query text, before a date, or all; with only a note, that note's opens. Returns counts."""
        self._owner_only("forgetting usage")
        from mindtui.service import usage

        with self._pool.connection() as pooled:
            return usage.forget(pooled.conn, query=query, note=note, before=before, everything=everything)

    def vault_root(self) -> Path | None:
        """The vault: the configured one, else the one this database was last imported from."""
        if self.settings.vault is not None:
            return Path(self.settings.vault)
        if not self.db_path.exists():
            return None
        with self._pool.connection() as pooled:
            root = get_meta(pooled.conn, VAULT_KEY)
        return Path(root) if root else None

    def note_file(self, name: str) -> Path:
        """The vault file of a note (owner only: it is for opening the file in an editor)."""
        self._owner_only("opening vault files")
        with self._pool.connection() as pooled:
            ref = find_note(pooled.conn, name)
            root = get_meta(pooled.conn, VAULT_KEY)
        if not root:
            raise NoteNotFound(f"{ref.path}: the database does not say which vault it was imported from")
        return Path(root) / ref.path

    def graph_stats(self) -> dict:
        with self._pool.connection() as pooled:
            return graph_stats(pooled.conn, self.settings)

    def status(self) -> dict:
        """What the database holds (for this audience), embedding coverage, models, recent jobs
        (a step whose process died shows as interrupted) and, for the owner, what works on it now."""
        models = [state.as_dict() for state in self.models.states(self.settings)]
        with self._pool.connection() as pooled:
            return database_status(pooled.conn, self.settings, self.audience, models)

    def summary(self) -> dict:
        """The status line's figures, cheap to poll: read again only after some connection wrote (status()
        scans every table). For the owner only: open cards and index_changes (store.jobs.index_changes)."""
        with self._pool.connection() as pooled:
            conn = pooled.conn
            stamp = (data_version(conn), conn.total_changes())
            cached = pooled.cache.get("summary")
            if cached is None or cached[0] != stamp:
                model_id = get_meta(conn, EMBEDDING_MODEL_KEY)
                coverage = vector_store.chunk_coverage(conn, model_id or "")
                embeddable = coverage["chunks"] - coverage["chunks_ai_excluded"]
                figures = {"notes": note_store.note_count(conn),
                           "coverage": round(coverage["chunks_with_vector"] / embeddable, 4) if embeddable else 1.0,
                           "index_changes": job_store.index_changes(conn)}
                cached = pooled.cache["summary"] = (stamp, figures)
            figures = dict(cached[1])
        owner = self.audience is Audience.OWNER  # (when the owner's vault changed is no agent's business)
        figures["cards"], figures["index_changes"] = (self.curation_counts(), figures["index_changes"]) if owner else ({}, [])
        figures["models"] = [state.as_dict() for state in self.models.states(self.settings)]
        return figures

    def models_status(self) -> dict:
        """The model files (paths, sizes, hashes, usable or why not) and what is loaded now."""
        return {"models": model_files.model_status(self.settings),
                "loaded": [state.as_dict() for state in self.models.states(self.settings)]}

    def retry_models(self) -> None:
        """Forget model load failures: the next use tries at once, not after models.retry_after_s (a rebuilt model)."""
        self.models.forget_failures()

    def preload_models(self) -> None:
        """Start loading the embedding model in the background (searches answer from full text meanwhile)."""
        self.models.embedder(self.settings, wait=False)

    # -- owner actions ---------------------------------------------------------------------
    def build_model(self, say: Say | None = None) -> dict:
        self._owner_only("building models")
        path = model_files.models_dir(self.settings) / model_files.E5_FILE_NAME
        digest = model_files.build_embedding_model(path, say)
        return {"path": str(path), "sha256": digest, "size": path.stat().st_size}

    def run_job(self, job: str, *, steps: list[str] | None = None, vault: Path | None = None,
                progress: StepProgress | None = None, message: Say | None = None,
                cancel: CancelToken | None = None, allow_mass_delete: bool = False, hooks: JobHooks | None = None):
        """The nightly job or single steps (import, embed, graph) under the database's job lock, in
        this thread. Returns the JobResult; JobLockedError when another job runs."""
        self._owner_only("running jobs")
        return run_job(job, self.settings, db_path=self.db_path, vault=vault or self.vault_root(), steps=steps,
                       progress=progress, message=message, cancel=cancel, allow_mass_delete=allow_mass_delete,
                       models=self.models, hooks=hooks)

    def prepare_job(self, job: str, steps: list[str] | None = None) -> None:
        """Load what the job's steps need ahead of run_job (a job child waiting to be told);
        StepError for an unknown job or step."""
        preload(check_job(job, steps))

    def start_job(self, job: str, *, steps: list[str] | None = None, vault: Path | None = None,
                  allow_mass_delete: bool = False, on_event: Callable[[dict], None] | None = None) -> JobProcess:
        """The same job in a child process (`mindtui --job ... --progress json`) with this service's
        settings: progress arrives as events, this process stays responsive. See job_process."""
        self._owner_only("running jobs")
        return JobProcess(self.settings, job, steps=steps, vault=vault, allow_mass_delete=allow_mass_delete,
                          on_event=on_event)

    def watch(self, on_change: Callable | None = None, *, vault: Path | None = None, catch_up: bool = True,
              force_polling: bool | None = None):
        """The live vault: a started VaultWatcher (jobs.watch) that imports changed, added, moved and
        deleted notes watch.quiet_s after the last change, each run in a job child (service.watching)
        under the job lock. on_change gets its VaultChange events (in its thread); stop() it when done.
        InputError when no vault is known."""
        from mindtui.jobs.watch import VaultWatcher
        from mindtui.service.watching import ChildImportRunner, check_store

        self._owner_only("watching the vault")
        root = vault or self.vault_root()
        if root is None:
            raise InputError("no vault to watch: pass --vault PATH, set `vault:` in the config, or import one first")
        if not Path(root).is_dir():
            raise InputError(f"the vault {root} is not a folder")
        check_store(self.settings)
        return VaultWatcher(Path(root), self.settings, ChildImportRunner(self.settings, Path(root)), on_change,
                            catch_up=catch_up, force_polling=force_polling).start()

    def job_history(self, limit: int = 50) -> list[dict]:
        """The last `limit` job invocations, newest first: job, batch_id, status (running, ok, failed,
        cancelled, interrupted: the worst of its steps), started/ended, seconds, and each step's
        status, times, report and error. Readable while a job runs."""
        with self._pool.connection() as pooled:
            batches, dead = settled(lambda: job_store.recent_batches(pooled.conn, limit),
                                    lambda batches: [run for runs in batches for run in runs], self.db_path)
        return [batch_summary([as_interrupted(run, dead) for run in runs]) for runs in batches]

    def evaluate(self, kind: str, source: Path, **options) -> dict:
        """`mindtui eval`: beir, golden or links on a scratch index (never this database). For the
        owner: it reads whatever vault it is given, and its figures would tell an agent what a
        private note contains."""
        self._owner_only("evaluation")
        from mindtui.service.evaluate import evaluate

        if kind == "usage":  # the owner's own log, in this database (read only: nothing is logged)
            from mindtui.service.usage_eval import eval_usage

            return eval_usage(self)
        return evaluate(self.settings, kind, source, holder=self.models, **options)

    # -- the curation queue (owner) ---------------------------------------------------------
    @property
    def _curation(self) -> CurationDesk:
        return CurationDesk(self.settings, self._pool, self.db_path, lambda: self.registry)

    def curation_counts(self) -> dict[str, int]:
        """Open cards per kind (every kind, 0 included)."""
        self._owner_only("the curation queue")
        return self._curation.counts()

    def curation_list(self, kind: str | None = None, status: str | None = "open",
                      limit: int | None = None) -> list[Card]:
        """Cards by importance, highest first (status None: every status)."""
        self._owner_only("the curation queue")
        return self._curation.list(kind, status, limit)

    def curation_card(self, item_id: int) -> Card:
        self._owner_only("the curation queue")
        return self._curation.card(item_id)

    def curation_resolve(self, item_id: int, action: str, **args) -> ActionOutcome:
        """Answer a card (args: target=NOTE name, days=N, text=TEXT, type=T). The vault write is atomic and only over
        the indexed content (NoteChanged otherwise); what was written is imported at once."""
        self._owner_only("the curation queue")
        return self._curation.resolve(item_id, action, args)

    def curation_preview(self, item_id: int, action: str, **args) -> list:
        """A dry run of curation_resolve for an action marked `confirm` (it writes vault files beyond
        one added link): the files it would write (PlannedWrite: path, change, before, after, diff)."""
        self._owner_only("the curation queue")
        return self._curation.preview(item_id, action, args)

    def curation_undo(self) -> ActionOutcome | None:
        """Reverse the latest answer (its file change too); None when there is nothing to undo."""
        self._owner_only("the curation queue")
        return self._curation.undo()

    def curation_refresh(self) -> dict:
        """Refresh every kind now (as the nightly graph step does); JobLockedError while a job runs."""
        self._owner_only("the curation queue")
        return self._curation.refresh()

    # -- knowledge items ---------------------------------------------------------------------
    @functools.cached_property
    def _knowledge(self) -> KnowledgeDesk:
        return KnowledgeDesk(self.settings, self._pool, self.audience, self.models)

    def knowledge_submit(self, proposal, source=None) -> Decision:
        """A proposal (v1 dict or JSON text) to the one writer; the decision (add, supersede, noop,
        update, card, invalid) with its reason. source: 'owner' (the owner's default), 'agent:NAME'
        (an agent's only choice), 'job:RUN', or a knowledge.proposal.Source. An agent is told no card
        reasons and no ids of items it may not see."""
        return self._knowledge.submit(proposal, source)

    def knowledge_ingest(self, lines, source=None) -> list[dict]:
        """Proposals as JSON lines, each decided on its own: [{line, decision, reason, item_id, card_id}]."""
        return self._knowledge.ingest(lines, source)

    def knowledge_list(self, about: str | None = None, type: str | None = None, status: str | None = None,
                       current_only: bool = True, limit: int | None = None) -> list[KnowledgeView]:
        """Items (what the audience may see) by subject note, type and status, most important first."""
        return self._cleaned(self._knowledge.list(about, type, status, current_only, limit))

    def knowledge_item(self, item_id: int) -> KnowledgeView:
        """One item with its supersede chain both ways, its sources and (for the owner) the writer's decisions."""
        return self._cleaned([self._knowledge.item(item_id)])[0]

    def knowledge_for_note(self, name: str) -> list[KnowledgeView]:
        """Current items about the note and items stated in it."""
        return self._cleaned(self._knowledge.for_note(name))

    def _cleaned(self, views: list[KnowledgeView]) -> list[KnowledgeView]:
        """For an agent: links to notes it may not see taken out of the items' text."""
        if self.audience is Audience.OWNER:
            return views
        clean = self._redactor()
        for view in views:
            view.title, view.body, view.quote = clean(view.title), clean(view.body), clean(view.quote)  # None stays
            for entry in view.supersedes + view.superseded_chain:
                entry["title"] = clean(entry["title"])
        return views

    def knowledge_edit(self, item_id: int, **fields) -> Decision:
        """The owner edits an item: it is superseded by the edited one (confirmed). Fields: type,
        title, body, quote, about, confidence, visibility, valid_from."""
        self._owner_only("editing knowledge items")
        return self._knowledge.edit(item_id, fields)


class _Redactor:
    """Text for the service's audience: unchanged for the owner, links to notes it may not see
    taken out for an agent (`names`: whether a note it sees bears a name, each looked up once)."""

    def __init__(self, pool: ConnectionPool | None) -> None:
        self.names = None if pool is None else functools.cache(lambda key: _visible_name(pool, key))

    def __call__(self, text):
        return text if self.names is None else redact(text, self.names)

    def value(self, value):
        return value if self.names is None else redact_value(value, self.names)


def _visible_name(pool: ConnectionPool, key: str) -> bool:
    with pool.connection() as pooled:  # the caller's own when it holds one (the pool is per thread)
        return is_visible_name(pooled.conn, key)


def _cleaned_chunks(chunks: list, clean: _Redactor) -> list:
    """The chunks as the audience may read them (the owner's as they are: copies took 50 ms on 5 MB)."""
    if clean.names is None:
        return chunks
    return [dataclasses.replace(chunk, text=clean(chunk.text), heading_path=clean(chunk.heading_path))
            for chunk in chunks]
