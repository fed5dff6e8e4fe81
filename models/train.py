"""Train Wide & Deep on prepared Criteo data; after every epoch, compare AUCs on the test split.

    python -m models.train --data DIR --batch-size 512 --seed 0 --out runs/wd

``--data`` is a prepared directory (``python -m data_prep``), a Criteo file (raw TSV, Kaggle
CSV or DeepCTR CSV, gzip or not; prepared into ``OUT/data`` first), or ``synthetic[:ROWS]``
(the project's synthetic data, 100,000 rows by default, prepared into ``OUT/data``).

A share of the training rows (``--validation-fraction``) is held out: after each epoch its
AUC decides early stopping (``--patience``; the best epoch's weights are restored), and it
chooses the baseline's regularisation (:mod:`models.fitting`, :mod:`models.baseline`).

After each epoch (numbered from 0, as in the DPAUC paper) the model scores the test split and
three AUCs are computed from the same scores: the exact AUC (scikit-learn),
``tf.keras.metrics.AUC(num_thresholds=1000)``, and :class:`dpauc_tf.DPAUC` (label-DP, epsilon
1 per release by default). The run writes to ``--out``:

* ``metrics.json``: the configuration, the data, and per epoch ``epoch, exact_auc, tf_auc,
  dp_auc, dp_epsilon, dp_delta, dp_mechanism, num_thresholds, train_loss, examples_per_second``
  (plus ``dp_epsilon_total`` and ``dp_delta_total``, the basic-composition sums over the
  releases so far, and with DP-SGD
  ``dp_sgd_epsilon``, the training's epsilon so far);
* ``scores_epoch{N}.parquet``: the test labels and scores (columns ``label``, ``score``);
* ``metrics.json`` also holds ``baseline`` (a logistic regression on the same split,
  :mod:`models.baseline`), ``best_epoch`` and ``summary`` (the model's test AUC at its best
  epoch beside the baseline's, and the training time), printed at the end;
* ``manifest.json``: this run's id and start/finish times, its configuration, and its score
  files (``{"0": "scores_epoch0.parquet", ...}``), rewritten after every epoch.

An ``--out`` that already holds a run's files (score files, ``metrics.json``,
``manifest.json``) is refused, since tools that read every ``scores_epoch*`` file of a
directory would mix the two runs; ``--overwrite`` removes those files first (other files,
and the prepared ``data/``, are kept). Bad options (the DPAUC epsilon or mechanism, the
number of thresholds, epochs...) fail before any data are read or prepared.

With ``--dp-sgd`` the model is trained with tensorflow-privacy's DP Adam (per-example clipping
and Gaussian noise), so that both training and evaluation are private; the training epsilon
comes from dp-accounting's RDP accountant. This needs tensorflow-privacy, i.e. the TF 2.14
environment (``.venv``).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
import uuid
import warnings
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from dpauc_tf.tf_startup import import_tensorflow_quietly

import_tensorflow_quietly()  # before models.wide_deep imports TensorFlow: no C++ chatter

from data_prep.io import load_split_arrays, read_metadata, write_json  # noqa: E402
from data_prep.pipeline import prepare_criteo, prepare_synthetic  # noqa: E402
from data_prep.preprocess import check_test_fraction  # noqa: E402
from data_prep.reader import MalformedInputError  # noqa: E402
from models.fitting import (  # noqa: E402
    DEFAULT_DROPOUT,
    DEFAULT_EMBEDDING_L2,
    DEFAULT_MAX_EPOCHS,
    DEFAULT_PATIENCE,
    DEFAULT_VALIDATION_FRACTION,
    EarlyStopping,
    auc_or_nan,
    l2_for_rows,
    rare_id_threshold,
    rare_ids_to_oov,
    split_validation,
)
from models.wide_deep import (  # noqa: E402
    DEFAULT_EMBEDDING_DIM,
    DEFAULT_HIDDEN_UNITS,
    DEFAULT_LEARNING_RATE,
)

DEFAULT_SYNTHETIC_ROWS = 100_000
DEFAULT_BATCH_SIZE = 512
EVAL_BATCH_SIZE = 8192
METRICS_FILE = "metrics.json"
MANIFEST_FILE = "manifest.json"
# A run's own files in --out (write_json's ".tmp" names included): what --overwrite removes.
_RUN_FILE = re.compile(r"scores_epoch\d+\.(?:parquet|csv)|(?:metrics|manifest)\.json(?:\.tmp)?")


@dataclass
class DPSGDConfig:
    """DP-SGD settings (tensorflow-privacy's DP Adam).

    ``num_microbatches=None`` clips every example on its own (microbatches of one example);
    larger microbatches are faster but double the sensitivity, which the accounting reflects.
    """

    noise_multiplier: float = 1.1
    l2_norm_clip: float = 1.0
    num_microbatches: int | None = None
    delta: float = 1e-5


@dataclass
class TrainConfig:
    """Everything one training run needs (the command line's options)."""

    data: str
    out: str
    epochs: int = DEFAULT_MAX_EPOCHS
    batch_size: int = DEFAULT_BATCH_SIZE
    seed: int | None = 0
    embedding_dim: int = DEFAULT_EMBEDDING_DIM
    hidden_units: tuple[int, ...] = DEFAULT_HIDDEN_UNITS
    learning_rate: float = DEFAULT_LEARNING_RATE
    embedding_l2: float | None = DEFAULT_EMBEDDING_L2  # None: l2_for_rows (both parts)
    dp_auc_epsilon: float = 1.0
    dp_auc_mechanism: str | None = None  # None: DPAUC's own default (rank-sum)
    dp_auc_delta: float | None = None
    num_thresholds: int = 1000
    test_fraction: float = 0.1
    min_count: int = 1
    dp_sgd: DPSGDConfig | None = None
    verbose: int = 2
    progress: bool = True
    overwrite: bool = False
    validation_fraction: float = DEFAULT_VALIDATION_FRACTION
    patience: int = DEFAULT_PATIENCE
    dropout: float = DEFAULT_DROPOUT
    rare_id_count: int | None = None  # None: the data size's (rare_id_threshold)
    baseline: bool = True


def validate_config(config: TrainConfig) -> None:
    """Check every option before anything is read or trained; the DPAUC metric of the run is
    built once here so that its epsilon, mechanism and thresholds are checked by the metric
    itself.

    Raises:
        ValueError: for the first bad option, in one line.
    """
    _check_int("epochs", config.epochs, 1)
    _check_int("batch size", config.batch_size, 1)
    _check_int("embedding dim", config.embedding_dim, 1)
    _check_int("min count", config.min_count, 1)
    if config.seed is not None:
        _check_int("seed", config.seed, 0)
    if any(int(u) < 1 for u in config.hidden_units):
        raise ValueError(f"hidden units must be positive integers, got {config.hidden_units}")
    _check_number("learning rate", config.learning_rate, positive=True)
    if config.embedding_l2 is not None:
        _check_number("embedding L2", config.embedding_l2, positive=False)
    check_test_fraction(config.test_fraction)
    if not 0.0 < config.validation_fraction < 0.5:
        raise ValueError(
            f"validation fraction must be in (0, 0.5), got {config.validation_fraction!r}"
        )
    _check_int("patience", config.patience, 1)
    if config.rare_id_count is not None:
        _check_int("rare id count", config.rare_id_count, 1)
    if not 0.0 <= config.dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {config.dropout!r}")
    if config.verbose not in (0, 1, 2):
        raise ValueError(f"verbose must be 0, 1 or 2, got {config.verbose!r}")
    if config.dp_sgd is not None:
        dp = config.dp_sgd
        _check_number("noise multiplier", dp.noise_multiplier, positive=False)
        _check_number("L2 norm clip", dp.l2_norm_clip, positive=True)
        if not 0.0 < dp.delta < 1.0:
            raise ValueError(f"DP-SGD delta must be in (0, 1), got {dp.delta}")
        if dp.num_microbatches is not None:
            _check_int("microbatches", dp.num_microbatches, 1)
    _check_dp_auc(config)


def _check_int(name: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")


def _check_number(name: str, value: Any, *, positive: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")


def _check_dp_auc(config: TrainConfig) -> None:
    from dpauc_tf import DPAUC

    try:
        DPAUC(
            epsilon=config.dp_auc_epsilon,
            num_thresholds=config.num_thresholds,
            mechanism=config.dp_auc_mechanism,
            delta=config.dp_auc_delta,
            seed=evaluation_seed(config.seed, 0),
        )
    except (TypeError, ValueError) as error:
        if config.dp_auc_delta is None and "needs delta" in str(error):
            raise ValueError(
                f"DP AUC mechanism {config.dp_auc_mechanism!r} is (epsilon, delta)-DP: give "
                "its delta per release, --dp-auc-delta (TrainConfig.dp_auc_delta), e.g. "
                "--dp-auc-delta 1e-6"
            ) from None
        raise ValueError(
            f"bad DP AUC options (epsilon {config.dp_auc_epsilon!r}, mechanism "
            f"{config.dp_auc_mechanism!r}, delta {config.dp_auc_delta!r}, num_thresholds "
            f"{config.num_thresholds!r}): {error}"
        ) from error


def previous_run_files(out: str | os.PathLike) -> list[Path]:
    """The files of an earlier run in ``out``: score files, ``metrics.json``, the manifest."""
    out = Path(out)
    if not out.is_dir():
        return []
    return sorted(p for p in out.iterdir() if _RUN_FILE.fullmatch(p.name) and not p.is_dir())


def check_output_dir(out: str | os.PathLike, overwrite: bool) -> list[Path]:
    """The previous run's files to remove (with ``overwrite``); raises without it.

    Raises:
        FileExistsError: if ``out`` holds a run's files and ``overwrite`` is false.
        NotADirectoryError: if ``out`` is a file.
    """
    if os.path.exists(out) and not os.path.isdir(out):
        raise NotADirectoryError(f"--out {out} exists and is not a directory")
    previous = previous_run_files(out)
    if previous and not overwrite:
        names = [p.name for p in previous]
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        raise FileExistsError(
            f"--out {out} holds files of a previous run ({shown}); pass --overwrite to replace "
            "them, or choose another --out"
        )
    return previous


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def resolve_data(config: TrainConfig) -> Path:
    """The prepared directory for ``config.data``, preparing a file or synthetic rows first."""
    data = config.data
    prepared = Path(config.out) / "data"
    if data == "synthetic" or data.startswith("synthetic:"):
        rows_text = data.partition(":")[2] or str(DEFAULT_SYNTHETIC_ROWS)
        try:
            rows = int(rows_text.replace("_", ""))
        except ValueError:
            raise ValueError(f"--data synthetic:ROWS needs an integer, got {rows_text!r}") from None
        prepare_synthetic(
            rows,
            prepared,
            test_fraction=config.test_fraction,
            seed=config.seed,
            min_count=config.min_count,
            progress=config.progress,
        )
        return prepared
    path = Path(data)
    if path.is_dir():
        read_metadata(path)  # fails clearly if it is not a prepared directory
        return path
    if path.is_file():
        prepare_criteo(
            path,
            prepared,
            test_fraction=config.test_fraction,
            seed=config.seed,
            min_count=config.min_count,
            progress=config.progress,
        )
        return prepared
    raise FileNotFoundError(
        f"--data {data!r}: no such file or directory (give a prepared directory, a Criteo file, "
        "or synthetic[:ROWS])"
    )


def make_dp_sgd_optimizer(dp: DPSGDConfig, batch_size: int, learning_rate: float) -> Any:
    """tensorflow-privacy's DP Adam for Keras; a clear error where it cannot be imported."""
    try:
        from tensorflow_privacy import DPKerasAdamOptimizer
    except ImportError as error:  # Keras 3 world, or tensorflow-privacy not installed
        raise RuntimeError(
            "--dp-sgd needs tensorflow-privacy, which runs only with TensorFlow 2.14 / Keras 2 "
            "(the project's .venv, extra 'federated'); it does not import here: "
            f"{type(error).__name__}: {error}"
        ) from None
    microbatches = dp.num_microbatches or batch_size
    if batch_size % microbatches:
        raise ValueError(
            f"the batch size ({batch_size}) must be a multiple of the number of microbatches "
            f"({microbatches})"
        )
    return DPKerasAdamOptimizer(
        l2_norm_clip=dp.l2_norm_clip,
        noise_multiplier=dp.noise_multiplier,
        num_microbatches=microbatches,
        learning_rate=learning_rate,
    )


def dp_sgd_epsilon(
    num_examples: int, batch_size: int, epochs: int, dp: DPSGDConfig
) -> dict[str, float]:
    """Training epsilon of DP-SGD at ``dp.delta`` from dp-accounting's RDP accountant.

    Like tensorflow-privacy's ``compute_dp_sgd_privacy``, batches are treated as Poisson
    samples with rate ``batch_size / num_examples`` (the data are shuffled, not Poisson-sampled:
    the usual approximation), under add/remove-one-example neighbours. With microbatches of
    more than one example, one example can move a clipped microbatch gradient by twice the clip
    norm, so the effective noise multiplier is halved.
    """
    import dp_accounting

    steps = epochs * (num_examples // batch_size)
    microbatches = dp.num_microbatches or batch_size
    effective_noise = dp.noise_multiplier / (2.0 if microbatches < batch_size else 1.0)
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            batch_size / num_examples, dp_accounting.GaussianDpEvent(effective_noise)
        ),
        steps,
    )
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(event)
    return {
        "epsilon": float(accountant.get_epsilon(dp.delta)),
        "delta": dp.delta,
        "steps": steps,
        "effective_noise_multiplier": effective_noise,
    }


def exact_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The exact AUC (scikit-learn), NaN when the test split holds a single class."""
    return auc_or_nan(labels, scores)


def evaluation_seed(seed: int | None, epoch: int) -> int | None:
    """The DPAUC noise seed of one epoch's release (distinct per epoch, fixed by ``seed``)."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([seed, epoch]).generate_state(1)[0])


def test_aucs(
    labels: np.ndarray, scores: np.ndarray, config: TrainConfig, epoch: int
) -> dict[str, Any]:
    """Exact, TensorFlow and DP AUC of one epoch's test scores."""
    import tensorflow as tf

    from dpauc_tf import DPAUC

    tf_auc = tf.keras.metrics.AUC(num_thresholds=config.num_thresholds)
    tf_auc.update_state(labels, scores)
    dp_auc = DPAUC(
        epsilon=config.dp_auc_epsilon,
        num_thresholds=config.num_thresholds,
        mechanism=config.dp_auc_mechanism,
        delta=config.dp_auc_delta,
        seed=evaluation_seed(config.seed, epoch),
    )
    dp_auc.update_state(labels, scores)
    return {
        "exact_auc": exact_auc(labels, scores),
        "tf_auc": float(tf_auc.result()),
        "dp_auc": float(dp_auc.result()),
        "dp_epsilon": config.dp_auc_epsilon,
        "dp_delta": config.dp_auc_delta or 0.0,
        "dp_mechanism": dp_auc.mechanism.name,
        "dp_privacy": str(dp_auc.privacy_statement()),
        "num_thresholds": config.num_thresholds,
    }


def save_scores(path_stem: Path, labels: np.ndarray, scores: np.ndarray) -> Path:
    """Write test labels and scores as Parquet (CSV where pyarrow cannot be imported)."""
    import pandas as pd

    frame = pd.DataFrame({"label": labels.astype(np.int8), "score": scores.astype(np.float32)})
    try:
        import pyarrow  # noqa: F401

        path = path_stem.with_suffix(".parquet")
        frame.to_parquet(path, index=False)
    except ImportError as error:
        path = path_stem.with_suffix(".csv")
        warnings.warn(f"pyarrow unavailable ({error}); writing {path.name}", stacklevel=2)
        frame.to_csv(path, index=False, float_format="%.9g")
    return path


def load_scores(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read a ``scores_epoch{N}`` file (Parquet or CSV): ``(labels, scores)``."""
    import pandas as pd

    path = Path(path)
    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    return frame["label"].to_numpy(), frame["score"].to_numpy()


def train(config: TrainConfig) -> dict[str, Any]:
    """Run the training and the per-epoch evaluations; write and return ``metrics.json``.

    The options are checked first (:func:`validate_config`), then ``config.out`` (see
    :func:`check_output_dir`); only then are the data read or prepared. The previous run's
    files are removed (with ``config.overwrite``) just before the first epoch.
    """
    validate_config(config)
    out = Path(config.out)
    check_output_dir(out, config.overwrite)
    optimizer = None
    if config.dp_sgd is not None:
        optimizer = make_dp_sgd_optimizer(config.dp_sgd, config.batch_size, config.learning_rate)
    out.mkdir(parents=True, exist_ok=True)
    data_dir = resolve_data(config)
    metadata = read_metadata(data_dir)

    import tensorflow as tf

    from models.wide_deep import build_wide_deep

    if config.seed is not None:
        tf.keras.utils.set_random_seed(config.seed)
    loss = None
    if config.dp_sgd is not None:
        # DP-SGD clips per-example gradients: the loss must stay per example.
        loss = tf.keras.losses.BinaryCrossentropy(reduction=tf.keras.losses.Reduction.NONE)
    # The training split in memory, cut into the rows the model fits and the validation
    # rows that choose its epoch (early stopping) and the baseline's regularisation.
    fit_rows, val_rows = split_validation(
        load_split_arrays(data_dir, "train"), config.validation_fraction, config.seed
    )
    test_rows = load_split_arrays(data_dir, "test")
    rare = config.rare_id_count or rare_id_threshold(len(fit_rows["label"]))
    fit_rows, val_rows, test_rows = rare_ids_to_oov(fit_rows, (fit_rows, val_rows, test_rows), rare)
    train_rows = len(fit_rows["label"])
    wide_l2, deep_l2 = l2_for_rows(train_rows)
    if config.dp_sgd is not None:  # per-example losses: a scalar penalty does not add to them
        wide_l2 = deep_l2 = 0.0
    if config.embedding_l2 is not None:  # given: the same penalty on both parts
        wide_l2 = deep_l2 = config.embedding_l2
    model = build_wide_deep(
        metadata,
        embedding_dim=config.embedding_dim,
        hidden_units=config.hidden_units,
        learning_rate=config.learning_rate,
        embedding_l2=deep_l2,
        wide_l2=wide_l2,
        dropout=config.dropout,
        optimizer=optimizer,
        loss=loss,
    )
    train_data = _dataset(fit_rows, config.batch_size, config.seed, config.dp_sgd is not None)
    labels = test_rows["label"]
    baseline = None
    if config.baseline:
        from models.baseline import logistic_regression_baseline

        baseline = logistic_regression_baseline(
            fit_rows, val_rows, test_rows, metadata["vocab_sizes"]
        )

    for path in check_output_dir(out, config.overwrite):
        path.unlink()
    manifest: dict[str, Any] = {
        "run_id": uuid.uuid4().hex,
        "started": _now(),
        "finished": None,
        "complete": False,
        "config": _config_dict(config),
        "metrics_file": METRICS_FILE,
        "scores_files": {},
    }
    write_json(out / MANIFEST_FILE, manifest)
    report: dict[str, Any] = {
        "run_id": manifest["run_id"],
        "config": _config_dict(config),
        "data": {
            "directory": str(data_dir),
            "source": metadata["source"],
            "train_rows": train_rows,
            "validation_rows": len(val_rows["label"]),
            "test_rows": len(labels),
            "test_positives": int(labels.sum()),
            "vocab_sizes": metadata["vocab_sizes"],
            "rare_id_count": rare,
        },
        "regularisation": {"wide_l2": wide_l2, "embedding_l2": deep_l2, "dropout": config.dropout},
        "model": {"parameters": int(model.count_params())},
        "baseline": baseline,
        "epochs": [],
    }
    _print_header(config)
    stopping = EarlyStopping(config.patience)
    run_started = time.perf_counter()
    for epoch in range(config.epochs):
        started = time.perf_counter()
        history = model.fit(train_data, epochs=1, verbose=config.verbose, shuffle=False)
        seconds = time.perf_counter() - started
        trained = (
            (train_rows // config.batch_size) * config.batch_size if config.dp_sgd else train_rows
        )
        validation_auc = auc_or_nan(val_rows["label"], _predict(model, val_rows))
        scores = _predict(model, test_rows)
        row = {"epoch": epoch, **test_aucs(labels, scores, config, epoch)}
        row["validation_auc"] = validation_auc
        row["dp_epsilon_total"] = config.dp_auc_epsilon * (epoch + 1)
        row["dp_delta_total"] = (config.dp_auc_delta or 0.0) * (epoch + 1)
        row["train_loss"] = float(np.mean(history.history["loss"][-1]))
        row["train_seconds"] = round(seconds, 3)
        row["examples_per_second"] = trained / seconds
        if config.dp_sgd is not None:
            row["dp_sgd"] = dp_sgd_epsilon(train_rows, config.batch_size, epoch + 1, config.dp_sgd)
            row["dp_sgd_epsilon"] = row["dp_sgd"]["epsilon"]
        row["scores_file"] = save_scores(out / f"scores_epoch{epoch}", labels, scores).name
        report["epochs"].append(row)
        stop = stopping.update(epoch, validation_auc, model)
        report["best_epoch"] = stopping.best_epoch
        report["summary"] = _summary(report, time.perf_counter() - run_started)
        write_json(out / METRICS_FILE, report)
        manifest["scores_files"][str(epoch)] = row["scores_file"]
        manifest["complete"] = stop or epoch == config.epochs - 1
        if manifest["complete"]:
            manifest["finished"] = _now()
        write_json(out / MANIFEST_FILE, manifest)
        _print_row(row)
        if stop:
            break
    stopping.restore(model)  # the best epoch's weights (by validation AUC)
    _print_summary(report["summary"])
    return report


def _dataset(rows: dict[str, np.ndarray], batch_size: int, seed: int | None, drop: bool):
    """The fitting rows as a shuffled, batched ``tf.data.Dataset`` of ``(features, label)``."""
    import tensorflow as tf

    from data_prep.schema import CATEGORICAL_IDS_KEY, INTEGER_FEATURES_KEY

    features = {
        INTEGER_FEATURES_KEY: rows[INTEGER_FEATURES_KEY].astype(np.float32),
        CATEGORICAL_IDS_KEY: rows[CATEGORICAL_IDS_KEY].astype(np.int32),
    }
    data = tf.data.Dataset.from_tensor_slices((features, rows["label"].astype(np.float32)))
    data = data.shuffle(len(rows["label"]), seed=seed, reshuffle_each_iteration=True)
    return data.batch(batch_size, drop_remainder=drop).prefetch(2)


def _predict(model, rows: dict[str, np.ndarray]) -> np.ndarray:
    from data_prep.schema import CATEGORICAL_IDS_KEY, INTEGER_FEATURES_KEY

    features = {key: rows[key] for key in (INTEGER_FEATURES_KEY, CATEGORICAL_IDS_KEY)}
    return model.predict(features, batch_size=EVAL_BATCH_SIZE, verbose=0).reshape(-1)


def _summary(report: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The model at its best epoch (by validation AUC) beside the baseline, same split."""
    best = report["epochs"][report["best_epoch"]]
    summary = {
        "best_epoch": report["best_epoch"],
        "model_validation_auc": best["validation_auc"],
        "model_test_auc": best["exact_auc"],
        "train_seconds": round(seconds, 3),
    }
    baseline = report.get("baseline")
    if baseline is not None:
        summary["baseline_test_auc"] = baseline["test_auc"]
        summary["model_minus_baseline"] = best["exact_auc"] - baseline["test_auc"]
    return summary


def _print_summary(summary: dict[str, Any]) -> None:
    line = (
        f"best epoch {summary['best_epoch']} (validation AUC "
        f"{summary['model_validation_auc']:.4f}): Wide & Deep test AUC "
        f"{summary['model_test_auc']:.4f}"
    )
    if "baseline_test_auc" in summary:
        line += (
            f"; logistic-regression baseline {summary['baseline_test_auc']:.4f} "
            f"(difference {summary['model_minus_baseline']:+.4f})"
        )
    print(line + f"; trained in {summary['train_seconds']:.1f} s", flush=True)


def _config_dict(config: TrainConfig) -> dict[str, Any]:
    values = asdict(config)
    values["hidden_units"] = list(config.hidden_units)
    return values


def _print_header(config: TrainConfig) -> None:
    eps = f"DP AUC (eps={config.dp_auc_epsilon:g})"
    extra = "  DP-SGD eps" if config.dp_sgd is not None else ""
    print(
        f"{'epoch':>5}  {'loss':>7}  {'exact AUC':>9}  {'TF AUC':>7}  {eps:>18}  "
        f"{'examples/s':>10}{extra}",
        flush=True,
    )


def _print_row(row: dict[str, Any]) -> None:
    extra = f"  {row['dp_sgd_epsilon']:10.3f}" if "dp_sgd_epsilon" in row else ""
    print(
        f"{row['epoch']:>5}  {row['train_loss']:7.4f}  {row['exact_auc']:9.4f}  "
        f"{row['tf_auc']:7.4f}  {row['dp_auc']:18.4f}  {row['examples_per_second']:10,.0f}{extra}",
        flush=True,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m models.train",
        description="Train Wide & Deep on Criteo-shaped data and compare exact, TensorFlow and "
        "label-DP AUCs on the test split after every epoch.",
    )
    parser.add_argument(
        "--data",
        required=True,
        help="a prepared directory, a Criteo file, or synthetic[:ROWS] "
        f"(default rows {DEFAULT_SYNTHETIC_ROWS:,})",
    )
    parser.add_argument(
        "--out", required=True, help="output directory (metrics.json, manifest.json, scores)"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the score files, metrics.json and manifest.json of a previous run in --out "
        "(without it such a directory is refused)",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=DEFAULT_MAX_EPOCHS,
        help="most epochs; training stops earlier when the validation AUC has not improved "
        f"for --patience epochs (default {DEFAULT_MAX_EPOCHS})",
    )
    parser.add_argument(
        "--patience",
        type=int,
        default=DEFAULT_PATIENCE,
        help=f"epochs without a better validation AUC before stopping (default {DEFAULT_PATIENCE})",
    )
    parser.add_argument(
        "--validation-fraction",
        type=float,
        default=DEFAULT_VALIDATION_FRACTION,
        help="share of the training rows held out to choose the epoch and the baseline's "
        f"regularisation (default {DEFAULT_VALIDATION_FRACTION})",
    )
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--seed", default="0", help="an integer, or 'none' for fresh entropy")
    parser.add_argument("--embedding-dim", type=int, default=DEFAULT_EMBEDDING_DIM)
    parser.add_argument(
        "--hidden-units",
        default=",".join(map(str, DEFAULT_HIDDEN_UNITS)),
        help="comma-separated widths of the deep layers",
    )
    parser.add_argument("--learning-rate", type=float, default=DEFAULT_LEARNING_RATE)
    parser.add_argument(
        "--embedding-l2",
        type=float,
        default=None,
        help="L2 penalty on the wide weights and the embeddings (default: by the number of "
        "rows, models.fitting.l2_for_rows)",
    )
    parser.add_argument("--dropout", type=float, default=DEFAULT_DROPOUT)
    parser.add_argument(
        "--rare-id-count",
        type=int,
        default=None,
        help="ids seen fewer times in the fitting rows share the out-of-vocabulary id "
        "(default: by the number of rows, models.fitting.rare_id_threshold)",
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the logistic-regression baseline"
    )
    parser.add_argument(
        "--dp-auc-epsilon", type=float, default=1.0, help="DPAUC epsilon per release"
    )
    parser.add_argument(
        "--dp-auc-mechanism",
        default=None,
        help="DPAUC's mechanism (default: DPAUC's own, rank-sum for the ROC AUC)",
    )
    parser.add_argument(
        "--dp-auc-delta",
        type=float,
        default=None,
        help="DPAUC delta per release, for the (epsilon, delta) mechanisms (auc-only, "
        "paper-gaussian); unset for the pure-DP ones",
    )
    parser.add_argument("--num-thresholds", type=int, default=1000)
    parser.add_argument("--test-fraction", type=float, default=0.1)
    parser.add_argument("--min-count", type=int, default=1)
    dp = parser.add_argument_group("DP-SGD (needs tensorflow-privacy: TF 2.14 / Keras 2)")
    dp.add_argument("--dp-sgd", action="store_true", help="train with DP Adam")
    dp.add_argument("--noise-multiplier", type=float, default=DPSGDConfig.noise_multiplier)
    dp.add_argument("--l2-norm-clip", type=float, default=DPSGDConfig.l2_norm_clip)
    dp.add_argument(
        "--microbatches", type=int, default=None, help="default: the batch size (per-example)"
    )
    dp.add_argument("--dp-sgd-delta", type=float, default=DPSGDConfig.delta)
    parser.add_argument(
        "--verbose", type=int, choices=(0, 1, 2), default=None, help="Keras fit verbosity"
    )
    return parser


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    seed = None if str(args.seed).lower() == "none" else int(args.seed)
    try:
        hidden = tuple(int(u) for u in str(args.hidden_units).split(",") if u.strip())
    except ValueError:
        raise ValueError(
            f"--hidden-units must be comma-separated integers: {args.hidden_units!r}"
        ) from None
    dp = None
    if args.dp_sgd:
        dp = DPSGDConfig(
            noise_multiplier=args.noise_multiplier,
            l2_norm_clip=args.l2_norm_clip,
            num_microbatches=args.microbatches,
            delta=args.dp_sgd_delta,
        )
    verbose = args.verbose if args.verbose is not None else (1 if sys.stdout.isatty() else 2)
    return TrainConfig(
        data=args.data,
        out=args.out,
        epochs=args.epochs,
        batch_size=args.batch_size,
        seed=seed,
        embedding_dim=args.embedding_dim,
        hidden_units=hidden,
        learning_rate=args.learning_rate,
        embedding_l2=args.embedding_l2,
        dropout=args.dropout,
        rare_id_count=args.rare_id_count,
        patience=args.patience,
        validation_fraction=args.validation_fraction,
        baseline=not args.no_baseline,
        dp_auc_epsilon=args.dp_auc_epsilon,
        dp_auc_mechanism=args.dp_auc_mechanism,
        dp_auc_delta=args.dp_auc_delta,
        num_thresholds=args.num_thresholds,
        test_fraction=args.test_fraction,
        min_count=args.min_count,
        dp_sgd=dp,
        verbose=verbose,
        overwrite=args.overwrite,
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = config_from_args(args)
        report = train(config)
    except (OSError, ValueError, RuntimeError, MalformedInputError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {Path(config.out) / METRICS_FILE} and {MANIFEST_FILE}")
    del report
    return 0


if __name__ == "__main__":
    sys.exit(main())
