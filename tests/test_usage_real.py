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


def test_memory_finds_a_seen_need_again_and_leaves_the_control_alone(report):
    """Measured here: the first query typed again comes first for every seen need (memory off: 4 of
    5); the second wordings of this small vault gain nothing yet and lose nothing; the control
    group stays where it was, with clean and with noisy opens."""
    seen, control, noisy = report["seen"], report["control"], report["noisy"]
    assert [e["group"] for e in report["split"]].count("seen") == 5 and seen["queries"] == 5
    assert seen["verbatim"]["memory"]["hit@1"] == 1.0
    assert seen["verbatim"]["memory"]["ndcg@5"] > seen["verbatim"]["no_memory"]["ndcg@5"]
    assert seen["memory"]["ndcg@5"] >= seen["no_memory"]["ndcg@5"]
    for part in ("memory", "verbatim"):
        clean = control[part] if part == "memory" else control["verbatim"]["memory"]
        base = control["no_memory"] if part == "memory" else control["verbatim"]["no_memory"]
        assert abs(clean["ndcg@5"] - base["ndcg@5"]) <= 0.01
    assert abs(noisy["control"]["memory"]["ndcg@5"] - noisy["control"]["no_memory"]["ndcg@5"]) <= 0.02
    assert sum(e["wrong_open_when_noisy"] for e in report["split"]) == 1  # 20 % of 5 seen
