"""The quality guard's comparison (mindtui.evaluation.guard) on small hand-made reports: what
counts as a drop, the tolerances, sets that were not measured, the exit code; and the script's
usage errors. Nothing here runs a search or needs ../shared/eval."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mindtui.evaluation import guard


def golden_report(ndcg: float = 0.70, hit: float = 0.60, fts: float = 0.65, vector: float = 0.55,
                  keyword: float = 0.90, paraphrase: float = 0.40) -> dict:
    """The shape of a `mindtui eval golden` report (only what the guard reads)."""
    def system(value: float, hit_at_1: float) -> dict:
        return {"ndcg@5": value, "ndcg@10": value + 0.01, "hit@1": hit_at_1}

    return {"kind": "golden", "queries": 20,
            "systems": {"fts": system(fts, 0.5), "vector": system(vector, 0.4), "hybrid+graph": system(ndcg, hit)},
            "categories": {"keyword": {"fts": system(0.95, 1.0), "hybrid+graph": system(keyword, 1.0)},
                           "paraphrase": {"fts": system(0.2, 0.0), "hybrid+graph": system(paraphrase, 0.2)}}}


def beir_report(ndcg: float = 0.85, fts: float = 0.80, vector: float = 0.82) -> dict:
    return {"kind": "beir", "queries": 100, "categories": {},
            "systems": {name: {"ndcg@10": value, "recall@100": 0.99}
                        for name, value in (("fts", fts), ("vector", vector), ("hybrid", ndcg))}}


def golden(**values) -> dict:
    return guard.set_figures(golden_report(**values), "hybrid+graph", ["ndcg@5", "hit@1"])


def beir(**values) -> dict:
    return guard.set_figures(beir_report(**values), "hybrid", ["ndcg@10"])


def rows_by(rows: list[guard.Row]) -> dict[tuple[str, str, str], guard.Row]:
    return {(row.set, row.category, row.figure): row for row in rows}


def test_figures_are_the_shipped_headlines_the_lists_and_the_shipped_categories():
    figures = golden()
    assert figures["figures"] == {"hybrid+graph ndcg@5": 0.70, "hybrid+graph hit@1": 0.60, "fts ndcg@5": 0.65,
                                  "vector ndcg@5": 0.55}
    assert figures["categories"] == {"keyword": {"hybrid+graph ndcg@5": 0.90},
                                     "paraphrase": {"hybrid+graph ndcg@5": 0.40}}
    assert beir()["figures"] == {"hybrid ndcg@10": 0.85, "fts ndcg@10": 0.80, "vector ndcg@10": 0.82}
    assert beir()["categories"] == {}


def test_the_same_figures_pass():
    rows = guard.compare({"g": golden(), "b": beir()}, {"g": golden(), "b": beir()}, ["g", "b"])
    assert {row.verdict for row in rows} == {guard.OK}
    assert len(rows) == 4 + 2 + 3
    assert guard.exit_code(rows) == 0


def test_a_set_figure_that_drops_beyond_its_tolerance_fails_and_its_row_says_which():
    rows = guard.compare({"g": golden()}, {"g": golden(ndcg=0.694)}, ["g"])
    row = rows_by(rows)[("g", "", "hybrid+graph ndcg@5")]
    assert row.verdict == guard.DROP and row.delta == pytest.approx(-0.006)
    assert [r for r in rows if r.verdict != guard.OK] == [row]
    assert guard.exit_code(rows) == 1
    line = next(line for line in guard.format_table(rows).splitlines() if "DROP" in line)
    assert line.split()[:6] == ["g", "hybrid+graph", "ndcg@5", "0.7000", "0.6940", "-0.0060"]


def test_a_drop_within_the_set_tolerance_passes_and_exactly_the_tolerance_passes():
    assert guard.exit_code(guard.compare({"g": golden()}, {"g": golden(ndcg=0.696)}, ["g"])) == 0
    # 0.70 - 0.005 in floats is 0.6950000000000001 or so: the rounded figure must still pass.
    assert guard.exit_code(guard.compare({"g": golden()}, {"g": golden(ndcg=0.695)}, ["g"])) == 0
    assert guard.verdict(0.7, 0.695, guard.SET_TOLERANCE) == guard.OK
    assert guard.verdict(0.7, 0.6949, guard.SET_TOLERANCE) == guard.DROP


def test_the_lists_are_gated_at_the_set_level_too():
    rows = guard.compare({"g": golden()}, {"g": golden(vector=0.54)}, ["g"])
    assert rows_by(rows)[("g", "", "vector ndcg@5")].verdict == guard.DROP
    assert guard.exit_code(rows) == 1


def test_a_category_has_its_own_wider_tolerance():
    # -0.015 in one category: within 0.02 (while the same fall would fail a set figure).
    rows = guard.compare({"g": golden()}, {"g": golden(paraphrase=0.385)}, ["g"])
    assert rows_by(rows)[("g", "paraphrase", "hybrid+graph ndcg@5")].verdict == guard.OK
    assert guard.exit_code(rows) == 0
    rows = guard.compare({"g": golden()}, {"g": golden(paraphrase=0.37)}, ["g"])
    row = rows_by(rows)[("g", "paraphrase", "hybrid+graph ndcg@5")]
    assert row.verdict == guard.DROP
    assert guard.exit_code(rows) == 1
    assert "g / paraphrase" in next(line for line in guard.format_table(rows).splitlines() if "DROP" in line)


def test_a_category_can_fail_while_the_set_holds():
    """What slipped on held-out data: the whole set within its tolerance, one category far below."""
    rows = guard.compare({"g": golden()}, {"g": golden(ndcg=0.698, keyword=0.80)}, ["g"])
    assert rows_by(rows)[("g", "", "hybrid+graph ndcg@5")].verdict == guard.OK
    assert [(r.category, r.verdict) for r in rows if r.verdict != guard.OK] == [("keyword", guard.DROP)]
    assert guard.exit_code(rows) == 1


def test_a_rise_passes_and_is_shown_as_up():
    rows = guard.compare({"b": beir()}, {"b": beir(ndcg=0.90)}, ["b"])
    assert rows_by(rows)[("b", "", "hybrid ndcg@10")].verdict == guard.UP
    assert guard.exit_code(rows) == 0


def test_a_baseline_set_that_was_asked_for_and_not_measured_fails():
    rows = guard.compare({"g": golden(), "b": beir()}, {"g": golden()}, ["g", "b"])
    missing = [row for row in rows if row.set == "b"]
    assert {row.verdict for row in missing} == {guard.MISSING} and len(missing) == 3
    assert guard.exit_code(rows) == 1
    assert "MISSING" in guard.format_table(rows)


def test_a_figure_the_baseline_has_and_this_run_lacks_fails():
    now = golden()
    del now["categories"]["paraphrase"]
    rows = guard.compare({"g": golden()}, {"g": now}, ["g"])
    assert rows_by(rows)[("g", "paraphrase", "hybrid+graph ndcg@5")].verdict == guard.MISSING
    assert guard.exit_code(rows) == 1


def test_a_set_not_run_with_only_is_listed_and_does_not_fail():
    rows = guard.compare({"g": golden(), "b": beir()}, {"b": beir()}, ["b"])
    assert [(row.set, row.verdict) for row in rows if row.set == "g"] == [("g", guard.NOT_RUN)]
    assert guard.exit_code(rows) == 0
    assert "1 baseline sets not run" in guard.totals(rows)


def test_a_set_or_figure_new_to_the_baseline_is_shown_and_does_not_fail():
    rows = guard.compare({}, {"b": beir()}, ["b"])
    assert {row.verdict for row in rows} == {guard.NEW}
    assert guard.exit_code(rows) == 0
    assert guard.totals(rows) == "3 figures: 0 ok, 0 up, 0 dropped, 0 missing, 3 new"


def test_the_table_has_one_row_per_figure_with_baseline_now_delta_and_verdict():
    rows = guard.compare({"b": beir()}, {"b": beir(fts=0.70, vector=0.83)}, ["b"])
    lines = guard.format_table(rows).splitlines()
    assert lines[0].split() == ["set", "/", "category", "metric", "baseline", "now", "delta", "verdict"]
    assert [line.split()[:6] for line in lines[1:]] == [
        ["b", "hybrid", "ndcg@10", "0.8500", "0.8500", "+0.0000"],
        ["b", "fts", "ndcg@10", "0.8000", "0.7000", "-0.1000"],
        ["b", "vector", "ndcg@10", "0.8200", "0.8300", "+0.0100"]]
    assert [line.split()[6] for line in lines[1:]] == ["ok", "DROP", "up"]
    assert guard.totals(rows) == "3 figures: 1 ok, 1 up, 1 dropped, 0 missing, 0 new"


# -- the script's usage errors (exit 2), before anything is indexed ------------------------------
BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import quality_guard  # noqa: E402


def test_an_absent_evaluation_folder_is_a_usage_error_that_says_so(tmp_path, capsys):
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"sets": {}}', encoding="utf-8")
    code = quality_guard.main(["--eval-dir", str(tmp_path / "no-eval"), "--baseline", str(baseline)])
    assert code == 2
    err = capsys.readouterr().err
    assert f"no evaluation folder at {tmp_path / 'no-eval'}" in err and "a user's clone has none" in err
    assert not (tmp_path / "no-eval").exists()


def test_an_unknown_set_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stopped:
        quality_guard.main(["--only", "help-de,nope"])
    assert stopped.value.code == 2
    assert "unknown set(s) nope" in capsys.readouterr().err


def test_no_baseline_is_a_usage_error_unless_one_is_being_written(tmp_path, capsys):
    (tmp_path / "eval").mkdir()
    code = quality_guard.main(["--eval-dir", str(tmp_path / "eval"), "--baseline", str(tmp_path / "absent.json")])
    assert code == 2
    assert "no baseline at" in capsys.readouterr().err


def test_a_cache_folder_inside_the_repository_is_refused(tmp_path, capsys):
    (tmp_path / "eval").mkdir()
    code = quality_guard.main(["--eval-dir", str(tmp_path / "eval"), "--cache-dir", str(BENCH / "scratch")])
    assert code == 2
    assert "inside the repository" in capsys.readouterr().err
    assert not (BENCH / "scratch").exists()


def test_the_cache_follows_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MINDTUI_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "eval").mkdir()
    args = quality_guard.parse_args(["--eval-dir", str(tmp_path / "eval")])
    settings = quality_guard.shipped_settings(None)
    eval_dir, cache = quality_guard.check_folders(args, quality_guard.SETS, settings)
    assert cache == (tmp_path / "data" / "quality-guard").resolve()
    assert eval_dir == (tmp_path / "eval").resolve()
