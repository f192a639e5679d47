"""Per-query rows in an eval report and `mindtui eval --compare A.json B.json` (no model needed)."""

from __future__ import annotations

import json

from mindtui.cli import main
from mindtui.evaluation.commands import format_comparison
from mindtui.evaluation.metrics import first_relevant_rank
from mindtui.evaluation.runs import evaluate
from mindtui.search.engine import SearchResponse, SearchResult


class ListEngine:
    """Answers each query with a fixed ranking of paths."""

    def __init__(self, rankings: dict[str, list[str]]) -> None:
        self.rankings = rankings

    def search(self, query, options):
        return SearchResponse(options.mode, results=[SearchResult(p, p, p, 1.0, "", None) for p in self.rankings[query]])


QUERIES = {"q1": "alpha", "q2": "beta", "q3": "gamma"}
QRELS = {"q1": {"a.md": 1.0}, "q2": {"b.md": 1.0, "c.md": 0.5}, "q3": {"x.md": 1.0}}
CATEGORIES = {"q1": "keyword", "q2": "paraphrase", "q3": "paraphrase"}


def report(rankings: dict[str, list[str]]) -> dict:
    result = evaluate(ListEngine(rankings), ["hybrid"], QUERIES, QRELS, ["ndcg@5", "hit@1"], 10,
                      categories=CATEGORIES)
    return {"kind": "golden", "source": "set.json", "queries": len(QUERIES), **result}


def test_first_relevant_rank_counts_only_fully_relevant():
    assert first_relevant_rank(["c.md", "z.md", "b.md"], QRELS["q2"]) == 3  # c.md is partial
    assert first_relevant_rank(["z.md"], QRELS["q2"]) == 0


def test_report_keeps_each_querys_score_rank_and_top():
    rows = report({"alpha": ["a.md"], "beta": ["z.md", "b.md"], "gamma": []})["per_query"]["hybrid"]
    assert rows["q1"] == {"query": "alpha", "ndcg@5": 1.0, "rank": 1, "top": ["a.md"], "category": "keyword"}
    assert rows["q2"]["rank"] == 2 and rows["q2"]["top"] == ["z.md", "b.md"]
    assert rows["q3"]["rank"] == 0 and rows["q3"]["ndcg@5"] == 0.0


def test_comparison_shows_categories_and_each_moved_query_worst_first():
    before = report({"alpha": ["a.md"], "beta": ["z.md", "b.md"], "gamma": ["x.md"]})
    after = report({"alpha": ["a.md"], "beta": ["b.md"], "gamma": ["y.md", "z.md"]})
    text = format_comparison(before, after, names=("A.json", "B.json"))
    assert "compare A.json → B.json" in text
    assert "2 queries changed (1 up, 1 down)" in text
    lines = text.splitlines()
    moved = [line for line in lines if line.startswith("  +") or line.startswith("  -")]
    assert moved[0].startswith("  -1.000 q3 [paraphrase]") and "rank 1→0" in moved[0]
    assert moved[1].startswith("  +0.281 q2 [paraphrase] 0.480→0.760") and "top: z.md → b.md" in moved[1]
    assert not any(" q1 " in line for line in moved)  # unchanged queries are not listed
    paraphrase = next(line for line in lines if line.startswith("paraphrase"))
    assert "0.740→0.380 (-0.360)" in paraphrase  # ideal DCG 1 + 0.5/log2(3): (0.480 + 1) / 2 → (0.760 + 0) / 2


def test_cli_compare_reads_two_saved_reports(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(report({"alpha": ["a.md"], "beta": ["b.md"], "gamma": ["x.md"]})), encoding="utf-8")
    b.write_text(json.dumps(report({"alpha": ["z.md"], "beta": ["b.md"], "gamma": ["x.md"]})), encoding="utf-8")
    assert main(["eval", "--compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "1 queries changed (0 up, 1 down)" in out and "q1 [keyword] 1.000→0.000 rank 1→0" in out
    b.write_text("[1, 2]", encoding="utf-8")
    assert main(["eval", "--compare", str(a), str(b)]) == 2
    assert "not a report" in capsys.readouterr().err
    assert main(["eval"]) == 2  # nothing to measure and nothing to compare
