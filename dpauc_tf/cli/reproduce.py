"""``dpauc reproduce``: the DPAUC paper's tables 1-5, next to the project's mechanisms.

Examples:
    >>> from dpauc_tf.cli.main import build_parser
    >>> build_parser().parse_args(["reproduce", "table5", "--scores", "synthetic"]).format
    'markdown'
"""

from __future__ import annotations

import sys
from pathlib import Path

from dpauc_tf.cli.formats import format_rows


def load_score_sets(source: str) -> dict:
    """``{epoch: ScoreSet}`` from ``"synthetic"`` or a directory of ``scores_epoch<N>`` files."""
    from dpauc_tf.experiments.score_files import epoch_files, read_score_file

    if source == "synthetic":
        from dpauc_tf.experiments.synthetic import paper_score_sets

        return paper_score_sets()
    return {epoch: read_score_file(path) for epoch, path in epoch_files(source).items()}


def run_reproduce(args) -> int:
    from dpauc_tf.experiments import tables

    targets = list(tables.TABLES) if args.target == "all" else [args.target]
    score_sets = load_score_sets(args.scores)
    runner = tables.TableRunner(score_sets, repeats=args.seeds, seed=args.seed)
    last_epoch = max(score_sets)
    rows = runner.run(
        targets,
        paper_grid=args.threshold_grid,
        progress=not args.no_progress,
        keep=(lambda table, epoch, setting: epoch == last_epoch) if args.plot else None,
    )
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
