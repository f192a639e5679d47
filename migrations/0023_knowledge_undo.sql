-- 0023: what an answer to a knowledge card changed in the knowledge tables (JSON, see
-- store.knowledge_journal), so `curate undo` puts the knowledge back too: the items it added
-- end, the columns it changed are as before, the sources it counted go. NULL: it changed none.

ALTER TABLE curation_actions ADD COLUMN knowledge TEXT;
