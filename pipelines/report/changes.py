"""Policy changes and their measured effects, in words: one home for the Changes page, the chart
annotations and the weekly report's "What changed and what it did".

Pure polars and text. The inputs are rows of the ``policy_changes`` view (the ledger) and of
``policy_change_impact`` (the measured effects; None where that view is absent: "effects not
measured yet"). METRICS.md "Policy changes in words" defines each phrase.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Final

import polars as pl

from pipelines.report.formatting import fmt_number

__all__ = [
    "ENOUGH_DAYS",
    "NOT_MEASURED",
    "actor_text",
    "change_hover",
    "changes_in_window",
    "effect_text",
    "effects_table",
    "enough_text",
    "kpi_label",
    "ledger_table",
    "life_text",
    "value_change_text",
    "week_changes",
    "what_text",
    "when_text",
]

#: Shown where ``policy_change_impact`` does not exist (or holds no row for a change).
NOT_MEASURED: Final = "effects not measured yet"
#: Days after a change that read as "a week".
ENOUGH_DAYS: Final = 7

#: Who a scheduler does not record, by ``policy_changes.scheduler``.
_NO_ACTOR: Final = {
    "slurm": "unknown (Slurm does not record it)",
    "kueue": "unknown (the Kubernetes API keeps no history of it)",
}
#: Verdict order for a bundle's or a change's summary.
_VERDICTS: Final = ("improved", "regressed", "no detectable effect", "too little data")


#: A ``policy_change_impact`` KPI for a reader, by its name (the part before ``[bucket]``);
#: METRICS.md "Policy change impact" defines each.
_KPI_LABELS: Final = {
    "wait_p50_h": "p50 time to start",
    "wait_p90_h": "p90 time to start",
    "occupancy": "occupancy",
    "jain": "Jain's index of usage ÷ share",
    "held_for_gangs_gpu_h": "GPU-hours held for gangs",
    "entitlement_ratio_min": "lowest team entitlement ratio",
    "preemption_loss_gpu_h": "preemption loss",
    "goodput_ratio": "goodput ÷ allocated",
}


def kpi_label(kpi: str | None) -> str:
    """A KPI's name for a reader: ``wait_p90_h[64+]`` → "p90 time to start, 64+ GPUs",
    ``preemption_loss_gpu_h`` → "preemption loss"; an unknown name as is."""
    name, _, bucket = str(kpi).partition("[")
    label = _KPI_LABELS.get(name, str(kpi))
    if not bucket or name not in _KPI_LABELS:
        return label
    size = bucket.rstrip("]")
    return f"{label}, {size} GPU{'' if size in ('1', '<1') else 's'}"


def actor_text(actor: str | None, scheduler: str | None) -> str:
    """Who made the change: the actor, or why it is unknown (``scontrol reconfigure`` and the
    snapshot diffs record nobody)."""
    if actor:
        return actor
    return _NO_ACTOR.get(str(scheduler), "unknown (not recorded)")


def _utc(ts: dt.datetime) -> dt.datetime:
    return ts.astimezone(dt.UTC) if ts.tzinfo else ts.replace(tzinfo=dt.UTC)


def when_text(changed_at: dt.datetime | None, changed_after: dt.datetime | None) -> str:
    """``2026-03-05 14:02 UTC`` for an exact time; ``between 2026-03-04 06:00 and 2026-03-05
    06:00 UTC`` for a change seen between two snapshots; ``unknown`` without a time."""
    if changed_at is None:
        return "unknown"
    at = f"{_utc(changed_at):%Y-%m-%d %H:%M}"
    if changed_after is None:
        return f"{at} UTC"
    return f"between {_utc(changed_after):%Y-%m-%d %H:%M} and {at} UTC"


def what_text(obj: str | None, key: str | None) -> str:
    """``account=speech shares`` (the object, then the setting)."""
    return " ".join(str(p) for p in (obj, key) if p)


def value_change_text(old: str | None, new: str | None) -> str:
    """``8 → 3``; an unknown or unset old value reads ``(unset or unknown)``, an unset new one
    ``(unset)``."""
    before = old if old is not None else "(unset or unknown)"
    return f"{before} → {new if new is not None else '(unset)'}"


def _num(value: float | None, unit: str | None, signed: bool = False, suffix: bool = True) -> str:
    """A KPI value: 3 decimals for a ratio or an index (no unit shown), else 2 and the unit."""
    if value is None:
        return "n/a"
    digits = 3 if unit in ("ratio", "index") else 2
    text = f"{value:+,.{digits}f}" if signed else fmt_number(value, digits)
    shown = suffix and unit and unit not in ("ratio", "index")
    return f"{text} {unit}" if shown else text


def effect_text(row: Mapping[str, Any]) -> str:
    """One effect: ``p90 time to start, 64+ GPUs: -1.20 h (95 % CI -2.00 to -0.40), improved``
    (the KPI as :func:`kpi_label` names it)."""
    unit = row.get("unit")
    est = _num(row.get("estimate"), unit, signed=True)
    if row.get("ci_low") is not None and row.get("ci_high") is not None:
        est += (
            f" (95 % CI {_num(row['ci_low'], unit, signed=True, suffix=False)} to "
            f"{_num(row['ci_high'], unit, signed=True, suffix=False)})"
        )
    return f"{kpi_label(row.get('kpi'))}: {est}, {row.get('verdict')}"


def _post_days(row: Mapping[str, Any], changed_at: dt.datetime | None) -> int | None:
    end = row.get("window_end")
    if end is not None and changed_at is not None:
        return max(0, round((_utc(end) - _utc(changed_at)).total_seconds() / 86_400))
    n = row.get("n_post")
    return int(n) if n is not None else None


def enough_text(row: Mapping[str, Any], changed_at: dt.datetime | None = None) -> str:
    """Whether the data after the change tell an effect of the size measured.

    The span after the change is ``window_end − changed_at`` in whole days (``n_post`` without a
    change time); 7 days read "a week". It *is enough to tell* when the verdict is not ``too
    little data`` and the minimum detectable effect (``mde``, 80 % power at 5 %) is at most the
    estimate's size; otherwise it *is not*, and the text gives the MDE (an effect smaller than
    it would likely go unseen). A ``replay`` row has no MDE (its interval is the scheduler
    model's error bound, METRICS.md "Policy change impact"): the text gives that bound.
    """
    days = _post_days(row, changed_at)
    span = "a week" if days == ENOUGH_DAYS else ("the data" if days is None else f"{days} days")
    if row.get("method") == "replay" and row.get("estimate") is not None:
        # a replay's interval is the model's error bound, not a sampling interval: no MDE
        half = (float(row["ci_high"]) - float(row["ci_low"])) / 2
        return f"replay over {span}: model error ± {_num(half, row.get('unit'))}"
    mde, est = row.get("mde"), row.get("estimate")
    if row.get("verdict") == "too little data" or mde is None or est is None:
        return f"{span} is not enough to tell"
    if abs(float(est)) >= float(mde):
        return f"{span} is enough to tell"
    return f"{span} is not enough to tell: effects under {_num(mde, row.get('unit'))} go unseen"


def changes_in_window(
    ledger: pl.DataFrame,
    start: dt.datetime | None,
    end: dt.datetime | None,
    cluster: str | None = None,
) -> pl.DataFrame:
    """Ledger rows with ``changed_at`` in ``[start, end]`` (either bound open when None) on
    ``cluster`` (all when None)."""
    if ledger.height == 0:
        return ledger
    keep = pl.lit(True)
    if start is not None:
        keep &= pl.col("changed_at") >= _utc(start)
    if end is not None:
        keep &= pl.col("changed_at") <= _utc(end)
    if cluster is not None:
        keep &= pl.col("cluster") == cluster
    return ledger.filter(keep)


def _effects_of(effects: pl.DataFrame | None, change_id: str) -> list[dict[str, Any]]:
    if effects is None or effects.height == 0:
        return []
    return effects.filter(pl.col("change_id") == change_id).to_dicts()


def _summary(rows: Sequence[Mapping[str, Any]], measured: bool) -> str:
    if not measured:
        return NOT_MEASURED
    if not rows:
        return "no effect measured for it"
    counts = {v: sum(1 for r in rows if r.get("verdict") == v) for v in _VERDICTS}
    told = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    return f"{told} (of {len(rows)} estimates)"


def change_hover(change: Mapping[str, Any], effects: pl.DataFrame | None, top: int = 3) -> str:
    """The hover text of a change on a chart: what, who, when, effect (HTML line breaks).

    Effects are the change's ``policy_change_impact`` rows, improved and regressed first, at
    most ``top`` of them; without the view, "effects not measured yet".
    """
    rows = _effects_of(effects, str(change["change_id"]))
    rows.sort(key=lambda r: (_VERDICTS.index(r["verdict"]) if r.get("verdict") in _VERDICTS
                             else 9, str(r.get("kpi")), str(r.get("method"))))  # fmt: skip
    if effects is None:
        effect = NOT_MEASURED
    elif not rows:
        effect = "no effect measured for it"
    else:
        effect = "; ".join(f"{effect_text(r)} ({r.get('method')})" for r in rows[:top])
    return "<br>".join(
        [
            f"<b>{what_text(change.get('object'), change.get('key'))}</b>: "
            f"{value_change_text(change.get('old'), change.get('new'))}",
            f"who: {actor_text(change.get('actor'), change.get('scheduler'))}",
            f"when: {when_text(change.get('changed_at'), change.get('changed_after'))}",
            f"effect: {effect}",
        ]
    )


def ledger_table(
    ledger: pl.DataFrame,
    effects: pl.DataFrame | None,
    recommendations: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The ledger for a reader: one row per change, or per bundle (changes that
    ``policy_change_impact`` estimated together, same ``bundle_id``) with its members.

    Args:
        ledger: ``policy_changes`` rows.
        effects: ``policy_change_impact`` rows, or None (effects not measured yet).
        recommendations: ``change_id, id, status`` of the recommendations changes applied;
            given, a ``Recommendation`` column names them (``rec-… (measured)``).

    Returns:
        Columns ``When, Cluster, Scope, What, Old → new, Who, Source, Changes, Effects``
        (text; ``Changes`` is the number of ledger rows in the row), newest first; a bundle's
        ``What`` and ``Old → new`` list its members in the same order, joined by ``; ``, and its
        ``When`` is its earliest member's.
    """
    cols = ["When", "Cluster", "Scope", "What", "Old → new", "Who", "Source", "Changes", "Effects"]
    if ledger.height == 0:
        return pl.DataFrame(schema=dict.fromkeys(cols, pl.String()))
    bundles: dict[str, str] = {}
    if effects is not None and effects.height and "bundle_id" in effects.columns:
        for r in effects.select("change_id", "bundle_id").unique().iter_rows(named=True):
            if r["bundle_id"] is not None:
                bundles[str(r["change_id"])] = str(r["bundle_id"])
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in ledger.sort("changed_at", "change_id").iter_rows(named=True):
        groups.setdefault(bundles.get(str(c["change_id"]), str(c["change_id"])), []).append(c)
    out = []
    for members in groups.values():
        first = members[0]
        rows = [e for m in members for e in _effects_of(effects, str(m["change_id"]))]
        if len(members) > 1:  # a bundle's estimate is repeated on each member: count it once
            rows = list({(r["kpi"], r["method"]): r for r in rows}.values())
        out.append(
            {
                "When": when_text(first["changed_at"], first.get("changed_after")),
                "Cluster": first["cluster"],
                "Scope": ", ".join(dict.fromkeys(str(m["scope"]) for m in members)),
                "What": "; ".join(what_text(m["object"], m["key"]) for m in members),
                "Old → new": "; ".join(value_change_text(m["old"], m["new"]) for m in members),
                "Who": ", ".join(
                    dict.fromkeys(actor_text(m.get("actor"), m.get("scheduler")) for m in members)
                ),
                "Source": ", ".join(dict.fromkeys(str(m["source"]) for m in members)),
                "Changes": str(len(members)),
                "Effects": _summary(rows, effects is not None),
                "_at": first["changed_at"],
            }
        )
    if recommendations is not None:
        cols.append("Recommendation")
        applied: dict[str, list[str]] = {}
        for r in recommendations.iter_rows(named=True):
            applied.setdefault(str(r["change_id"]), []).append(
                f"{r['id']} ({life_text(r['status'])})"
            )
        for row, members in zip(out, groups.values(), strict=True):
            row["Recommendation"] = ", ".join(
                x for m in members for x in applied.get(str(m["change_id"]), [])
            )
    frame = pl.DataFrame(out).sort("_at", descending=True, nulls_last=True).drop("_at")
    return frame.select(cols)


def life_text(status: object) -> str:
    """A recommendation's life up to ``status`` (METRICS.md "Recommendation status"), for a
    reader: ``applied`` → "applied", ``measured`` → "applied → measured", ``confirmed`` →
    "applied → measured → confirmed", ``regressed`` → "applied → measured → regressed";
    ``proposed`` or anything else as is."""
    path = {"applied": 1, "measured": 2, "confirmed": 3, "regressed": 3}
    text = str(status)
    if text not in path:
        return text
    steps = ["applied", "measured", text][: path[text]]
    return " → ".join(steps)


def effects_table(effects: pl.DataFrame | None, ledger: pl.DataFrame) -> pl.DataFrame | None:
    """Each change's (or bundle's) measured effects for a reader; None without the view.

    Returns:
        Columns ``Cluster, Change, KPI, Method, Before, After, Effect (95 % CI), Verdict,
        Placebo p, MDE, Enough data?`` (text but the p-value), one row per change or bundle ×
        KPI × method, regressed and improved first (a change's methods on one KPI side by side,
        ranked by the most telling verdict among them: the ``replay`` row beside the ``its``
        one). ``Change`` is the change's what and old → new (a bundle's members joined by
        ``; ``).
    """
    cols = ["Cluster", "Change", "KPI", "Method", "Before", "After", "Effect (95 % CI)",
            "Verdict", "Placebo p", "MDE", "Enough data?"]  # fmt: skip
    if effects is None:
        return None
    if effects.height == 0:
        return pl.DataFrame(schema={c: pl.Float64() if c == "Placebo p" else pl.String()
                                    for c in cols})  # fmt: skip
    by_id = {str(c["change_id"]): c for c in ledger.iter_rows(named=True)}
    with_b = effects.with_columns(
        (pl.coalesce("bundle_id", "change_id") if "bundle_id" in effects.columns
         else pl.col("change_id")).alias("_b")
    )  # fmt: skip
    ids_of = {
        str(r["_b"]): r["_ids"]
        for r in with_b.group_by("_b")
        .agg(pl.col("change_id").unique().sort().alias("_ids"))
        .iter_rows(named=True)
    }
    first = with_b.unique(["_b", "kpi", "method"], keep="first", maintain_order=True)
    out = []
    for r in first.iter_rows(named=True):
        ids = ids_of.get(str(r["_b"]), [r["change_id"]])
        changes = [by_id[i] for i in ids if i in by_id]
        at = min((c["changed_at"] for c in changes if c["changed_at"] is not None), default=None)
        out.append(
            {
                "Cluster": r["cluster"],
                "Change": "; ".join(
                    f"{what_text(c['object'], c['key'])}: {value_change_text(c['old'], c['new'])}"
                    for c in changes
                )
                or ", ".join(ids),
                "KPI": kpi_label(r["kpi"]),
                "Method": r["method"],
                "Before": _num(r["before"], r["unit"]),
                "After": _num(r["after"], r["unit"]),
                "Effect (95 % CI)": effect_text(r).split(": ", 1)[1].rsplit(", ", 1)[0],
                "Verdict": r["verdict"],
                "Placebo p": None if r["placebo_p"] is None else float(r["placebo_p"]),
                "MDE": _num(r["mde"], r["unit"]),
                "Enough data?": enough_text(r, at),
                "_o": _VERDICTS.index(r["verdict"]) if r["verdict"] in _VERDICTS else 9,
            }
        )
    # a change's methods on one KPI stay side by side (its, then did and replay), ranked by the
    # most telling verdict among them
    frame = pl.DataFrame(out).with_columns(pl.col("_o").min().over("Cluster", "Change", "KPI"))
    return frame.sort("_o", "Cluster", "Change", "KPI", "Method").drop("_o")


#: ``ledger_table`` / ``effects_table`` columns → the report's JSON keys.
_LEDGER_KEYS: Final = {"When": "when", "Cluster": "cluster", "Scope": "scope", "What": "what",
                       "Old → new": "old_new", "Who": "who", "Source": "source",
                       "Changes": "changes", "Effects": "effects"}  # fmt: skip
_EFFECT_KEYS: Final = {"Cluster": "cluster", "Change": "change", "KPI": "kpi", "Method": "method",
                       "Before": "before", "After": "after", "Effect (95 % CI)": "effect",
                       "Verdict": "verdict", "Placebo p": "placebo_p", "MDE": "mde",
                       "Enough data?": "enough"}  # fmt: skip


def week_changes(
    ledger: pl.DataFrame | None,
    effects: pl.DataFrame | None,
    start: dt.datetime,
    end: dt.datetime,
) -> dict[str, Any]:
    """The weekly report's "What changed and what it did", JSON-ready.

    Args:
        ledger: every ``policy_changes`` row (None: the view does not exist).
        effects: every ``policy_change_impact`` row (None: effects not measured yet).
        start: the week's first instant (UTC).
        end: the week's end (exclusive).

    Returns:
        ``{"measured", "changes", "effects", "note"}``: ``changes`` are :func:`ledger_table`
        rows (keys ``when, cluster, scope, what, old_new, who, source, changes, effects``) of
        the changes made in ``[start, end)``; ``effects`` are :func:`effects_table` rows (keys
        ``cluster, change, kpi, method, before, after, effect, verdict, placebo_p, mde,
        enough``) of the effects measured in the week: those whose estimation window ends in
        ``(start, end]``, whatever week the change was made. ``note`` says why a list is empty.
    """
    if ledger is None:
        return {"measured": False, "changes": [], "effects": [],
                "note": "No policy-change ledger in this serving copy."}  # fmt: skip
    week = ledger.filter((pl.col("changed_at") >= _utc(start)) & (pl.col("changed_at") < _utc(end)))
    changes = [{_LEDGER_KEYS[k]: v for k, v in r.items()}
               for r in ledger_table(week, effects).iter_rows(named=True)]  # fmt: skip
    measured: list[dict[str, Any]] = []
    if effects is not None and effects.height:
        done = effects.filter(
            (pl.col("window_end") > _utc(start)) & (pl.col("window_end") <= _utc(end))
        )
        shown = effects_table(done, ledger)
        rows = shown.iter_rows(named=True) if shown is not None else iter(())
        measured = [{_EFFECT_KEYS[k]: v for k, v in r.items()} for r in rows]
    notes = []
    if not changes:
        notes.append("No scheduler setting changed this week.")
    if effects is None:
        notes.append(f"{NOT_MEASURED[0].upper()}{NOT_MEASURED[1:]}.")
    elif not measured:
        notes.append("No effect was measured this week.")
    return {"measured": effects is not None, "changes": changes, "effects": measured,
            "note": " ".join(notes) or None}  # fmt: skip
