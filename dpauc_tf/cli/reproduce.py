"""``dpauc reproduce``: the DPAUC paper's tables 1-5, next to the project's mechanisms.

    >>> from dpauc_tf.cli.main import build_parser
    >>> build_parser().parse_args(["reproduce", "table5", "--scores", "synthetic"]).format
    'markdown'

``--format markdown`` and ``table`` print a summary per paper table: the last epoch, one row
per setting and one column per mechanism (the AUC's mean ± std over the repeats), the exact
and TensorFlow AUCs once below it. ``--all-rows`` prints every row (every epoch, setting and
mechanism, with its guarantee); ``json`` and ``csv`` always hold every row.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpauc_tf.cli.arguments import add_common_flags, positive_int, seed_int
from dpauc_tf.cli.formats import format_rows, format_with_notes
from dpauc_tf.cli.progress import add_progress_flags, show_progress
from dpauc_tf.core.vocabulary import ThresholdGrid

REPRODUCE_TARGETS = ("table1", "table2", "table3", "table4", "table5", "all")


def register_cli(sub, common=add_common_flags) -> argparse.ArgumentParser:
    """Adds ``reproduce`` to ``dpauc``'s sub-commands (``common`` adds ``--format``/``--debug``)."""
    rp = sub.add_parser(
        "reproduce",
        help="the DPAUC paper's tables, next to the project's",
        description="The DPAUC paper's tables 1-5 with the paper's settings, plus rows for the "
        "project's mechanisms.",
    )
    rp.add_argument("target", choices=REPRODUCE_TARGETS, help="which table")
    rp.add_argument(
        "--scores",
        required=True,
        help="'synthetic' or a directory with scores_epoch<N>.parquet|csv (models.train)",
    )
    rp.add_argument("--seeds", type=positive_int, default=100, help="repeats per setting")
    rp.add_argument("--seed", type=seed_int, default=0, help="base seed")
    rp.add_argument(
        "--threshold-grid",
        choices=ThresholdGrid.values(),
        default="reference",
        help="grid of the paper's rows (default: the reference code's)",
    )
    common(rp, default_format="markdown")
    rp.add_argument("--plot", help='directory for PNG plots (needs "dpauc-tf[plot]")')
    rp.add_argument(
        "--all-rows",
        action="store_true",
        help="markdown/table: every row (every epoch, setting and mechanism) instead of the "
        "summary (the last epoch, one row per setting, one column per mechanism); json and "
        "csv always hold every row",
    )
    rp.add_argument(
        "--per-client-noise",
        action="store_true",
        help="draw every client's noise, as 0.2 did (slow at K = 1000); by default the "
        "server's sum of the clients' Laplace noise is drawn at once: the same distribution, "
        "other numbers for the same seed",
    )
    add_progress_flags(rp)
    rp.set_defaults(func=run_reproduce)
    return rp


def load_score_sets(source: str) -> dict:
    """``{epoch: ScoreSet}`` from ``"synthetic"`` or a directory of ``scores_epoch<N>`` files."""
    from dpauc_tf.io.scores import epoch_files, read_score_file

    if source == "synthetic":
        from dpauc_tf.experiments.synthetic import paper_score_sets

        return paper_score_sets()
    return {epoch: read_score_file(path) for epoch, path in epoch_files(source).items()}


def run_reproduce(args) -> int:
    from dpauc_tf.experiments import tables

    targets = list(tables.TABLES) if args.target == "all" else [args.target]
    score_sets = load_score_sets(args.scores)
    runner = tables.TableRunner(
        score_sets, repeats=args.seeds, seed=args.seed, per_client_noise=args.per_client_noise
    )
    last_epoch = max(score_sets)
    rows = runner.run(
        targets,
        paper_grid=args.threshold_grid,
        progress=show_progress(args),
        keep=(lambda table, epoch, setting: epoch == last_epoch) if args.plot else None,
    )
    if args.format in ("markdown", "table") and not args.all_rows:
        print(format_summary(rows, args.format))
    else:
        formatter = {
            "markdown": tables.format_markdown,
            "csv": tables.format_csv,
            "json": tables.format_json,
            "table": lambda rows: format_rows(rows, "table"),
        }[args.format]
        print(formatter(rows))
    if args.plot:
        from dpauc_tf.experiments import plots

        written = plots.table_plots(runner, rows, Path(args.plot), epoch=last_epoch)
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
    return 0


def _mean_std(row: Mapping[str, Any]) -> str:
    if row["mean"] is None or row["mean"] != row["mean"]:  # None or NaN: no defined release
        return "undefined"
    text = f"{row['mean']:.4f} ± {row['std']:.2g}"
    return text + (f" ({row['undefined']} undefined)" if row.get("undefined") else "")


def _group_of(groups: list[dict[str, Any]], row: Mapping[str, Any]) -> dict[str, Any]:
    """The setting's group of a row: the latest group with its partition, K and epsilon
    (a row that follows its paper row lands in that row's group; table 4's rank-sum rows,
    which come after every paper row, in their setting's)."""
    for group in reversed(groups):
        if (group["setting"], group["K"], group["eps"]) == (
            row["setting"],
            row["clients"],
            f"{row['epsilon']:g}",
        ):
            return group
    return groups[-1]


def _summary_of_table(part: list[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per setting of one paper table (one epoch), a column per mechanism."""
    table = part[0]["table"]
    if table == 2:
        rows = [
            {
                "top K": r["top_k"],
                "positives": r["positives_in_top_k"],
                "precision": round(r["precision"], 4),
                "recall": round(r["recall"], 4),
            }
            for r in part
        ]
        return rows, [f"positive rate {part[0]['positive_rate']:.4f}"]
    first = part[0]["mechanism"]  # the paper's row opens every setting's group
    groups: list[dict[str, Any]] = []
    tf_aucs: dict[int, float] = {}
    own_grid: list[str] = []  # mechanisms that count on their own grid (score-noise)
    for r in part:
        if r["mechanism"] == first:
            groups.append(
                {
                    "setting": r["setting"],
                    "K": r["clients"],
                    "|Theta|": r["num_thresholds"],
                    "eps": f"{r['epsilon']:g}",
                }
            )
        group = _group_of(groups, r)
        if r["num_thresholds"] is None:
            own_grid += [] if r["mechanism"] in own_grid else [r["mechanism"]]
        elif group["|Theta|"] is None:
            group["|Theta|"] = r["num_thresholds"]
        group[r["mechanism"]] = _mean_std(r)
        tf_aucs[r["tf_num_thresholds"]] = r["tf_auc"]
    # columns that do not vary within the table say it once, in the notes
    constant = [
        name
        for name in ("setting", "K", "|Theta|", "eps")
        if len(groups) > 1 and len({str(g[name]) for g in groups}) == 1
    ]
    notes = []
    if constant:
        same = ", ".join(f"{name} = {groups[0][name]}" for name in constant)
        notes.append(f"in every row: {same}")
    for g in groups:
        for name in constant:
            del g[name]
    if own_grid:
        notes.append(f"{', '.join(own_grid)}: counted on its own grid, not |Theta|")
    if any(r["mechanism"] == "rank-sum" and r["clients"] > 1 for r in part):
        notes.append(
            "rank-sum: each client adds its own noise (no secure aggregation); "
            "secure-rank-sum: one noise in total, by secure aggregation"
        )
    tf_text = ", ".join(f"{v:.4f} (T={t})" for t, v in sorted(tf_aucs.items()))
    notes.append(f"exact AUC {part[0]['exact_auc']:.4f} (scikit-learn); TensorFlow AUC {tf_text}")
    return groups, notes


def format_summary(rows: Sequence[Mapping[str, Any]], fmt: str) -> str:
    """The tables as the README shows them: per paper table, the last epoch's settings as
    rows and the mechanisms as columns (mean ± std over the repeats)."""
    out = []
    for table in sorted({row["table"] for row in rows}):
        part = [row for row in rows if row["table"] == table]
        epochs = sorted({row["epoch"] for row in part})
        last = [row for row in part if row["epoch"] == epochs[-1]]
        summary, notes = _summary_of_table(last)
        repeats = last[0].get("repeats")
        title = f"Table {table}, epoch {epochs[-1]}"
        if repeats:
            title += f", AUC mean ± std over {repeats} releases"
        if len(epochs) > 1:
            title += f" (epochs {', '.join(map(str, epochs[:-1]))}: --all-rows)"
        heading = f"### {title}" if fmt == "markdown" else title
        out.append(heading + "\n\n" + format_with_notes(summary, fmt, notes))
    return "\n\n".join(out)
