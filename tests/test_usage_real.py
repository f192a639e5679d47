"""Usage memory with the real e5 model end to end: the repeat-need protocol (`mindtui eval repeat`)
on the sample vault, with ten second wordings of its own (tests/golden/sample_repeat.json)."""

from __future__ import annotations

import pytest

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.evaluation.workspace import mark_scratch
from mindtui.service import Service
from mindtui.store import open_database

from conftest import REPO, SAMPLE_VAULT

GOLDEN = REPO / "tests" / "golden" / "sample_vault.json"
REPEAT = REPO / "tests" / "golden" / "sample_repeat.json"


@pytest.fixture
def report(embedded_sample_db, real_model, tmp_path):
    scratch = tmp_path / "scratch.db"
    conn = open_database(embedded_sample_db, readonly=True)
    try:
        conn.execute("VACUUM INTO ?", (str(scratch),))  # the session's embedded copy, made a scratch index
    finally:
        conn.close()
    mark_scratch(scratch, "usage memory test")
    with Service(load_settings(), audience=Audience.OWNER) as service:
        return service.evaluate("repeat", GOLDEN, vault=SAMPLE_VAULT, repeat=REPEAT, scratch_db=scratch)


def test_seen_repeats_come_first_and_the_control_stays(report):
    seen, control = report["seen"], report["control"]
    assert [e["group"] for e in report["split"]].count("seen") == 5 and seen["queries"] == 5
    assert seen["memory"]["hit@1"] == 1.0 and seen["memory"]["ndcg@5"] > seen["no_memory"]["ndcg@5"]
    assert abs(control["memory"]["ndcg@5"] - control["no_memory"]["ndcg@5"]) <= 0.01
    assert seen["verbatim"]["memory"]["hit@1"] == 1.0  # the first query typed again
    noisy = report["noisy"]
    assert noisy["seen"]["memory"]["ndcg@5"] >= noisy["seen"]["no_memory"]["ndcg@5"]
    assert abs(noisy["control"]["memory"]["ndcg@5"] - noisy["control"]["no_memory"]["ndcg@5"]) <= 0.02
