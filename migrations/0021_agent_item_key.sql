-- 0021: the key of the numbers an agent is told for knowledge items (service.item_ids): a row id
-- counts the hidden items too, so an agent gets it through a permutation only this file knows.
INSERT OR IGNORE INTO meta(key, value) VALUES ('agent_item_key', lower(hex(randomblob(16))));
