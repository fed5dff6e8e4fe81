"""The demo: train Wide & Deep with DPAUC, then evaluate it privately with TFF.

    bash run.sh demo                       # sets up the environment, then runs this module
    python -m models.demo [--data synthetic:200000 | PATH] [--out DIR [--overwrite]]

Every run writes to a new directory, ``runs/demo/<date>-<time>`` (printed at the start and the
end), so the demo runs any number of times; ``--out DIR`` chooses the directory, and
``--overwrite`` lets a run replace the previous run's files there.

1. Prepares the data (the project's synthetic Criteo-shaped data by default; a real Criteo
   file with ``--data PATH``) and trains the Wide & Deep model for 3 epochs, evaluating every
   epoch with ``tf.keras.metrics.AUC(num_thresholds=1000)`` and ``DPAUC`` side by side.
2. Runs the federated DP-AUC evaluation of the best epoch's test scores (by validation AUC,
   whose weights training restores) in TensorFlow
   Federated: K = 10 and K = 100 clients, IID and non-IID partitions, the mechanisms
   ``paper``, ``histogram`` and ``secure-histogram`` at epsilon = 1 (label DP, per client).
3. Prints one table (the noise-free AUCs, marked as not private, then each DP AUC with its
   epsilon) and saves a ROC plot and an error-vs-epsilon plot (both from repeated releases of
   the same client counts).

It needs the federated world (TF 2.14 + TFF). TFF's worker process is shut down at exit.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

PARTITIONS = ("iid", "non-iid")
RUNS = Path("runs") / "demo"
# What a demo run leaves in its directory (models.train's own files are under model/).
RUN_FILES = ("roc.png", "auc_vs_epsilon.png", "model/metrics.json", "model/manifest.json")


def _run_directory(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Path:
    """A new directory under runs/demo, or --out (refused if it holds a run, without
    --overwrite: one line, before any work)."""
    if args.out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out, suffix = RUNS / stamp, 1
        while out.exists():
            suffix += 1
            out = RUNS / f"{stamp}-{suffix}"
        return out
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        parser.error(f"--out {out} is a file; give a directory")
    previous = [name for name in RUN_FILES if (out / name).exists()]
    if previous and not args.overwrite:
        parser.error(
            f"--out {out} holds a previous run ({', '.join(previous)}); pass --overwrite to "
            f"replace it, or leave out --out for a new directory under {RUNS}"
        )
    return out


def _csv(kind):
    def parse(text: str):
        try:
            return [kind(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated values, got {text!r}"
            ) from None

    return parse


def _mechanism_list(text: str) -> list[str]:
    from dpauc_tf.mechanisms.registry import list_mechanisms

    names = _csv(str)(text)
    usable = list_mechanisms(private=True, federated=True)
    unknown = [name for name in names if name not in usable]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown or unusable {unknown}; choose from {usable}")
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m models.demo",
        description="Train Wide & Deep with DPAUC, then a federated DP-AUC evaluation in TFF.",
    )
    parser.add_argument("--data", default="synthetic:200000", help="synthetic[:ROWS] or a file")
    parser.add_argument(
        "--out",
        default=None,
        help=f"output directory (default: a new {RUNS}/<date>-<time> for every run)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="let --out be a directory that holds a previous run (its files are replaced)",
    )
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0, help="per release, per client")
    parser.add_argument("--num-thresholds", type=int, default=100)
    parser.add_argument("--clients", type=_csv(int), default=[10, 100])
    parser.add_argument(
        "--mechanisms",
        type=_mechanism_list,
        default="paper,histogram,secure-histogram",
        help="comma-separated names from the registry that run in TFF (default: %(default)s)",
    )
    parser.add_argument("--repeats", type=int, default=50, help="releases per point in plots")
    parser.add_argument(
        "--embedding-l2",
        type=float,
        default=1e-4,
        help="L2 penalty on the embeddings (without it the synthetic data overfits by epoch 2)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the data, the training and every release (default: a fresh one, printed, "
        "so that two runs draw different noise and any run can be repeated)",
    )
    return parser


def _seed(args: argparse.Namespace) -> int:
    """``--seed``, or a fresh one from the operating system (printed with the run)."""
    if args.seed is not None:
        return args.seed
    import secrets

    return secrets.randbelow(2**31)


def _section(step: str) -> None:
    print(f"\n== {step}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    started = time.perf_counter()
    out = _run_directory(args, parser)
    out.mkdir(parents=True, exist_ok=True)
    print(f"run directory: {out}", flush=True)
    args.seed = _seed(args)
    print(f"seed: {args.seed} (--seed {args.seed} repeats this run)", flush=True)
    from dpauc_tf.tf_startup import import_tensorflow_quietly

    import_tensorflow_quietly()

    import numpy as np
    import tqdm

    from dpauc_tf.core.curve import confusion_from_histogram, roc_from_confusion
    from dpauc_tf.core.partitions import partition
    from dpauc_tf.core.thresholds import Thresholds
    from dpauc_tf.experiments import plots
    from dpauc_tf.simulation import client_histograms, simulate
    from models.train import TrainConfig, load_scores, train

    _section(f"1/3 Data and Wide & Deep training ({args.data}, {args.epochs} epochs)")
    report = train(
        TrainConfig(
            data=args.data,
            out=str(out / "model"),
            epochs=args.epochs,
            seed=args.seed,
            dp_auc_epsilon=args.epsilon,
            embedding_l2=args.embedding_l2,
            verbose=0,
            overwrite=args.overwrite,
        )
    )
    # The best epoch by validation AUC (whose weights training restores), not the last one.
    last = report["epochs"][report["best_epoch"]]
    labels, scores = load_scores(out / "model" / last["scores_file"])
    labels = labels.astype(np.float32)
    scores = scores.astype(np.float32)
    exact_auc, tf_auc_1000 = last["exact_auc"], last["tf_auc"]

    _section("2/3 Federated DP-AUC evaluation in TensorFlow Federated")
    from dpauc_tf.federated import (
        client_data_from_partition,
        evaluate,
        register_atexit_shutdown,
        shutdown_tff_workers,
    )

    register_atexit_shutdown()
    thresholds = Thresholds.make(args.num_thresholds)
    pooled_pos, pooled_neg = client_histograms(labels, scores, thresholds)
    tf_auc_t = _noise_free_auc(pooled_pos[0], pooled_neg[0])  # = tf.keras.metrics.AUC(T)
    rows, client_counts = [], {}
    settings = [(k, p, m) for k in args.clients for p in PARTITIONS for m in args.mechanisms]
    for num_clients, kind, mechanism in tqdm.tqdm(settings, desc="federated evaluations"):
        if num_clients > labels.size:
            raise SystemExit(f"--clients {num_clients} exceeds the {labels.size} test examples")
        ids = partition(kind, scores, labels, num_clients, seed=args.seed)
        client_counts[(num_clients, kind)] = client_histograms(
            labels, scores, thresholds, ids, num_clients
        )
        data = client_data_from_partition(scores, labels, ids, num_clients)
        result = evaluate(
            data,
            mechanism=mechanism,
            epsilon=args.epsilon,
            num_thresholds=args.num_thresholds,
            seed=args.seed + len(rows),
        )
        rows.append((kind, num_clients, mechanism, result.auc, result.epsilon, result))
    shutdown_tff_workers()

    _print_table(args, last, labels, exact_auc, tf_auc_1000, tf_auc_t, rows)

    _section(f"3/3 Plots ({args.repeats} releases per point)")
    fine = Thresholds.make(1000)
    fine_pos, fine_neg = client_histograms(labels, scores, fine)
    exact_roc = roc_from_confusion(confusion_from_histogram(fine_pos[0], fine_neg[0]))
    plot_k = max(args.clients)
    pos, neg = client_counts[(plot_k, "iid")]
    noisy = {}
    for index, name in enumerate(args.mechanisms):
        mechanism = _mechanism(name, args.epsilon, args.num_thresholds, plot_k)
        sim = simulate(mechanism, pos, neg, seed=args.seed + index, repeats=args.repeats)
        noisy[name] = (sim.fpr, sim.tpr)
    roc_path = plots.roc_band(
        (exact_roc.fpr.numpy(), exact_roc.tpr.numpy()),
        noisy,
        out / "roc.png",
        title=f"ROC at epsilon={args.epsilon:g}, K={plot_k} IID clients",
    )
    panels = {}
    epsilons = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    for num_clients in args.clients:
        pos, neg = client_counts[(num_clients, "iid")]
        panel = []
        for name in args.mechanisms:
            for eps in epsilons:
                mechanism = _mechanism(name, eps, args.num_thresholds, num_clients)
                sim = simulate(mechanism, pos, neg, seed=args.seed, repeats=args.repeats)
                panel.append(
                    {
                        "mechanism": name,
                        "epsilon": eps,
                        "mean": sim.mean,
                        "std": sim.std,
                        "aucs": np.asarray(sim.aucs),
                        "exact_auc": exact_auc,
                    }
                )
        panels[f"K={num_clients} IID"] = panel
    eps_path = plots.auc_vs_epsilon(
        panels,
        out / "auc_vs_epsilon.png",
        title=f"Error of the DP AUC against the exact AUC {exact_auc:.4f} (not private), "
        f"{args.repeats} releases per point",
    )
    print(f"saved {roc_path}\nsaved {eps_path}\nmetrics and scores in {out / 'model'}")
    print(f"done in {time.perf_counter() - started:.0f} s")
    return 0


def _print_table(args, last, labels, exact_auc, tf_auc_1000, tf_auc_t, rows) -> None:
    """The noise-free figures (marked: not private), then the releases; degenerate ones
    (an AUC of exactly 0 or 1) carry a footnote."""
    print(
        f"\nTest set of epoch {last['epoch']} (the best by validation AUC): {labels.size:,} examples, "
        f"{int(labels.sum()):,} positives"
    )
    print("\nNOT PRIVATE: noise-free, from the raw labels (for comparison only; never publish)")
    print(f"  {'exact AUC (scikit-learn)':34}{exact_auc:8.4f}")
    for name, value in (
        ("TF AUC, T=1000", tf_auc_1000),
        (f"TF AUC, T={args.num_thresholds}", tf_auc_t),
    ):
        print(f"  {name:34}{value:8.4f}   |error| {abs(value - exact_auc):.4f}")
    print("\nLABEL-DP RELEASES: one release each (|error| uses the exact AUC: not private)")
    print(f"  {'':34}{'AUC':>8}  {'epsilon':>8}  {'|error|':>8}")
    releases = [(f"DPAUC in Keras ({last['dp_mechanism']})", last["dp_auc"], last["dp_epsilon"])]
    releases += [(f"{m}, {kind}, K={k}", auc, eps) for kind, k, m, auc, eps, _ in rows]
    degenerate = False
    for name, auc, epsilon in releases:
        odd = auc in (0.0, 1.0) or auc != auc  # exactly 0 or 1, or NaN
        degenerate |= odd
        mark = " *" if odd else "  "
        print(f"  {name:34}{auc:8.4f}{mark}{epsilon:8g}  {abs(auc - exact_auc):8.4f}")
    print(
        "  epsilon: label DP per client for one evaluation (paper: the tight figure, half the "
        "paper's claim)"
    )
    if degenerate:
        note = (
            "* 1, 0 or nan: a degenerate release, not a property of the model. The noise "
            "swamps the counts (for paper: Laplace(4T/eps) on each of its 4T counts, from every "
            "client, summed); the reference AUC rule (clip at 0, sort by FPR) then gives 1 or "
            "0, and the AUC is nan (undefined) where a noisy class total is not positive. "
            "auc_vs_epsilon.png shows the spread over many releases."
        )
        print(textwrap.fill(note, 96, initial_indent="  ", subsequent_indent="    "))


def _noise_free_auc(pos, neg) -> float:
    from dpauc_tf.core.curve import auc_from_histogram

    return float(auc_from_histogram(pos, neg))


def _mechanism(name: str, epsilon: float, num_thresholds: int, num_clients: int):
    from dpauc_tf.mechanisms import get_mechanism

    return get_mechanism(
        name, epsilon=epsilon, num_thresholds=num_thresholds, num_clients=num_clients
    )


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        if "tensorflow_federated" in sys.modules:
            from dpauc_tf.federated.process import shutdown_tff_workers

            shutdown_tff_workers()
