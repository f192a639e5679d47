"""The quality guard's comparison: figures of `mindtui eval` reports against a kept baseline.

`bench/quality_guard.py` runs the development sets; this module turns each report into the
figures that are gated and compares them with `bench/quality_baseline.json`:

- per set: the shipped system's headline metric(s) and the fts-only and vector-only lists'
  headline metric, each allowed to drop by at most SET_TOLERANCE;
- per category of a golden set: the shipped system's headline metric, allowed CATEGORY_TOLERANCE.

Why these tolerances: the figures do not move run to run. Every text is embedded in a decode of
its own, so a vector does not depend on what was embedded beside it, nor on the thread count,
and ties rank by note id: two cold embeddings of the sample vault and XQuAD-de (1,509 texts)
gave bit-identical vectors, and a cold and a warm run the same figures (delta 0.0000 on all).
So the tolerance is not there for noise but for granularity: one query of the 60 in help-de moves
nDCG@5 by up to 0.017, so 0.005 fires on any query that loses a rank among its relevant notes
while it lets a figure's rounding pass; a category of ~10 queries moves 0.02 when one query
loses a fifth of its score (a relevant note from rank 1 to 2 costs 0.37 of a query's nDCG@5).
A rise beyond the tolerance passes and is shown as "up": update the baseline in a commit of
its own that says why.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

SET_TOLERANCE = 0.005
CATEGORY_TOLERANCE = 0.02
# Metrics are rounded to 4 decimals (metrics.score_runs): a delta of exactly the tolerance passes.
_EPSILON = 1e-9

OK, UP, DROP, NEW, MISSING, NOT_RUN = "ok", "up", "DROP", "new", "MISSING", "not run"
FAILING = (DROP, MISSING)


@dataclass
class Row:
    set: str
    category: str  # "" for the whole set
    figure: str  # "<system> <metric>"
    baseline: float | None
    now: float | None
    verdict: str

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.now is None:
            return None
        return round(self.now - self.baseline, 4)

    def as_dict(self) -> dict:
        return {**asdict(self), "delta": self.delta}


def set_figures(report: dict, shipped: str, metrics: list[str], lists: tuple[str, ...] = ("fts", "vector")) -> dict:
    """What the guard keeps of one `mindtui eval` report: {"queries", "figures", "categories"}.

    figures: "<shipped> <metric>" for each metric, and "<list> <metrics[0]>" for each list;
    categories: category -> {"<shipped> <metrics[0]>": value} (golden sets only)."""
    systems = report["systems"]
    headline = metrics[0]
    figures = {f"{shipped} {metric}": systems[shipped][metric] for metric in metrics}
    figures.update({f"{name} {headline}": systems[name][headline] for name in lists if name in systems})
    categories = {category: {f"{shipped} {headline}": per_system[shipped][headline]}
                  for category, per_system in sorted(report.get("categories", {}).items()) if shipped in per_system}
    return {"queries": report.get("queries"), "figures": figures, "categories": categories}


def compare(baseline: dict, now: dict, ran: list[str], *, set_tolerance: float = SET_TOLERANCE,
            category_tolerance: float = CATEGORY_TOLERANCE) -> list[Row]:
    """One row per figure of every set in `ran` (the sets this run was asked to measure) and in
    the baseline. `baseline` and `now` map a set's name to set_figures(); a set asked for but
    absent from `now` (it could not be measured) has its baseline figures MISSING; a baseline set
    not asked for (a run with --only) gets one "not run" row."""
    rows: list[Row] = []
    for name in list(dict.fromkeys([*ran, *baseline])):
        before = baseline.get(name)
        if name not in ran:
            rows.append(Row(name, "", "(all figures)", None, None, NOT_RUN))
            continue
        after = now.get(name) or {"figures": {}, "categories": {}}
        rows += _rows(name, "", (before or {}).get("figures", {}), after["figures"], set_tolerance)
        categories_before = (before or {}).get("categories", {})
        for category in dict.fromkeys([*categories_before, *after.get("categories", {})]):
            rows += _rows(name, category, categories_before.get(category, {}),
                          after.get("categories", {}).get(category, {}), category_tolerance)
    return rows


def _rows(name: str, category: str, before: dict, after: dict, tolerance: float) -> list[Row]:
    rows = []
    for figure in dict.fromkeys([*before, *after]):
        old, new = before.get(figure), after.get(figure)
        rows.append(Row(name, category, figure, old, new, verdict(old, new, tolerance)))
    return rows


def verdict(baseline: float | None, now: float | None, tolerance: float) -> str:
    if baseline is None:
        return NEW
    if now is None:
        return MISSING
    delta = now - baseline
    if delta < -tolerance - _EPSILON:
        return DROP
    return UP if delta > tolerance + _EPSILON else OK


def exit_code(rows: list[Row]) -> int:
    """0: nothing dropped beyond its tolerance and nothing the baseline has went unmeasured; 1 otherwise."""
    return 1 if any(row.verdict in FAILING for row in rows) else 0


def tolerance_of(row: Row) -> float:
    return CATEGORY_TOLERANCE if row.category else SET_TOLERANCE


def format_table(rows: list[Row]) -> str:
    """set / category, metric, baseline, now, delta, verdict: one line per figure."""
    def number(value: float | None, signed: bool = False) -> str:
        return "-" if value is None else (f"{value:+.4f}" if signed else f"{value:.4f}")

    def label(row: Row) -> str:
        if row.verdict == DROP:
            return f"DROP (more than {tolerance_of(row):g})"
        if row.verdict == UP:
            return f"up (more than {tolerance_of(row):g})"
        return {MISSING: "MISSING (not measured)", NEW: "new (not in the baseline)"}.get(row.verdict, row.verdict)

    table = [("set / category", "metric", "baseline", "now", "delta", "verdict")]
    table += [(row.set + (f" / {row.category}" if row.category else ""), row.figure, number(row.baseline),
               number(row.now), number(row.delta, signed=True), label(row)) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    aligned = []
    for line in table:
        cells = [cell.ljust(widths[i]) if i < 2 or i == 5 else cell.rjust(widths[i]) for i, cell in enumerate(line)]
        aligned.append("  ".join(cells).rstrip())
    return "\n".join(aligned)


def totals(rows: list[Row]) -> str:
    """"41 figures: 39 ok, 2 up, 0 dropped, 0 missing, 0 new" (a not-run set counts once)."""
    counts = {v: sum(row.verdict == v for row in rows) for v in (OK, UP, DROP, MISSING, NEW, NOT_RUN)}
    figures = len(rows) - counts[NOT_RUN]
    text = (f"{figures} figures: {counts[OK]} ok, {counts[UP]} up, {counts[DROP]} dropped, "
            f"{counts[MISSING]} missing, {counts[NEW]} new")
    return text + (f"; {counts[NOT_RUN]} baseline sets not run" if counts[NOT_RUN] else "")
