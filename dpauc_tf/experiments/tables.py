"""The DPAUC paper's tables (``docs/method.md``), regenerated next to the project's mechanisms.

=======  ==================================  =========================================  ======
table    paper rows                          settings                                   |Theta|
=======  ==================================  =========================================  ======
1        ``rr`` (randomized response)        eps in `RR_EPSILONS`, K=10 IID       200
2        top-K guess (why hide scores)       K (guesses) in `TOP_K`               -
3        ``score-noise``                     eps in `SCORE_NOISE_EPSILONS`, K=10  100
4        ``paper`` (DPAUC_Lap)               IID / non-IID x K in {10, 1000} x          100
                                             eps in {8, 4, 2, 1}
5        ``paper`` (DPAUC_Lap)               |Theta| in {10, 25, 50, 100, 200}, eps=1,  varies
                                             K=10 IID
=======  ==================================  =========================================  ======

Every setting of tables 1, 3, 4 and 5 also gets rows for the project's mechanisms
(`PROJECT_MECHANISMS`: ``histogram``, ``histogram-public-scores``, ``secure-histogram``)
at the same epsilon, clients and |Theta|, so the gain shows in the same output. Table 4, the
federated table, also gets the rank-sum releases of the ROC AUC (`RANK_SUM_MECHANISMS`):
``rank-sum`` with local noise per client (no secure aggregation: round one's bucket totals
in the clear, then each client's noisy rank sum with the global ranks) and ``secure-rank-sum``
(both rounds by secure aggregation), the federated defaults without and with secure
aggregation (`dpauc_tf.mechanisms.registry.default_mechanism`). They count on their own
fine grid (not |Theta|) and their law depends on the summed counts only, so the IID and
non-IID rows differ only by their draws. All settings run for every epoch of the score sets
(the paper: 0, 1, 2).

``docs/method.md`` gives table 4's and table 5's settings; it lists no epsilons for tables 1 and 3,
so `RR_EPSILONS` uses table 4's {8, 4, 2, 1} and `SCORE_NOISE_EPSILONS` adds 10
(``docs/method.md``: score noise "collapses towards 0.5 for eps <= 10"). Table 5's epsilon is 1, as in
the reference code's logs (``eps_stat = 1 / (4 |Theta|)``). The clients of tables 1, 3 and 5
are 10 IID, as in the reference code's logs for table 5.

Threshold grids: ``paper`` rows use the reference code's grid (``"reference"``) by default,
because the paper's numbers came from it; the project's mechanisms and ``tf_auc`` use
TensorFlow's grid. ``exact_auc`` is scikit-learn's.

Examples:
    >>> [s.mechanism for s in table_settings("table5")][:4]
    ['paper', 'histogram', 'histogram-public-scores', 'secure-histogram']
    >>> len(table_settings("table4"))
    96
    >>> [s.mechanism for s in table_settings("table4")][62:66]
    ['histogram-public-scores', 'secure-histogram', 'rank-sum', 'secure-rank-sum']
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dpauc_tf.core.curve import confusion_from_histogram, roc_from_confusion
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.experiments.ground_truth import exact_auc, tf_auc
from dpauc_tf.io.scores import ScoreFileError, ScoreSet
from dpauc_tf.mechanisms import mechanism_spec
from dpauc_tf.mechanisms.arguments import ReleaseArguments
from dpauc_tf.mechanisms.release import AUCResult
from dpauc_tf.simulation import client_histograms, simulate, simulate_examples, simulate_rank_sums

TABLES = ("table1", "table2", "table3", "table4", "table5")
PROJECT_MECHANISMS = ("histogram", "histogram-public-scores", "secure-histogram")
# Table 4's rows for the ROC AUC by rank sums: local noise per client, and secure aggregation.
RANK_SUM_MECHANISMS = ("rank-sum", "secure-rank-sum")
# The paper's own rows reproduce the reference code's estimator (clip, sort by FPR,
# trapezoid); the project's rows use each mechanism's consistent default.
PAPER_ROW_OPTIONS = {"paper": {"estimator": "reference"}}
RR_EPSILONS = (8.0, 4.0, 2.0, 1.0)
SCORE_NOISE_EPSILONS = (10.0, 8.0, 4.0, 2.0, 1.0)
TABLE4_EPSILONS = (8.0, 4.0, 2.0, 1.0)
TABLE4_CLIENTS = (10, 1000)
TABLE4_PARTITIONS = ("iid", "non-iid")
TABLE5_NUM_THRESHOLDS = (10, 25, 50, 100, 200)
TABLE5_EPSILON = 1.0
TOP_K = (1, 10, 100, 1_000, 10_000, 100_000)
SETTING_NAMES = {"iid": "IID", "non-iid": "non-IID"}


@dataclasses.dataclass(frozen=True)
class Setting:
    """One row of a table before it is run (the epoch is added when it runs).

    Examples:
        >>> Setting(table=4, mechanism="paper", epsilon=1.0, num_thresholds=100, clients=1000)
        Setting(table=4, mechanism='paper', epsilon=1.0, num_thresholds=100, partition='iid', clients=1000, threshold_grid='tf')
    """

    table: int
    mechanism: str
    epsilon: float
    num_thresholds: int
    partition: str = "iid"
    clients: int = 10
    threshold_grid: str = "tf"


def _with_project_rows(paper: Setting) -> list[Setting]:
    rows = [paper]
    for name in PROJECT_MECHANISMS:
        rows.append(dataclasses.replace(paper, mechanism=name, threshold_grid="tf"))
    return rows


def table_settings(table: str, paper_grid: str = "reference") -> list[Setting]:
    """The settings of one table (``"table1"`` ... ``"table5"``; ``"table2"`` has none).

    ``paper_grid`` is the threshold grid of the ``paper`` rows (``"reference"`` or ``"tf"``).
    """
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; choose one of {TABLES}")
    settings: list[Setting] = []
    if table == "table1":
        for eps in RR_EPSILONS:
            settings += _with_project_rows(Setting(1, "rr", eps, 200, threshold_grid=paper_grid))
    elif table == "table3":
        for eps in SCORE_NOISE_EPSILONS:
            settings += _with_project_rows(Setting(3, "score-noise", eps, 100))
    elif table == "table4":
        for partition in TABLE4_PARTITIONS:
            for clients in TABLE4_CLIENTS:
                for eps in TABLE4_EPSILONS:
                    settings += _with_project_rows(
                        Setting(4, "paper", eps, 100, partition, clients, paper_grid)
                    )
        # after the paper's settings, so that every earlier row keeps its position (its seed)
        settings += [
            Setting(4, name, eps, 100, partition, clients)
            for partition in TABLE4_PARTITIONS
            for clients in TABLE4_CLIENTS
            for eps in TABLE4_EPSILONS
            for name in RANK_SUM_MECHANISMS
        ]
    elif table == "table5":
        for num_thresholds in TABLE5_NUM_THRESHOLDS:
            settings += _with_project_rows(
                Setting(5, "paper", TABLE5_EPSILON, num_thresholds, threshold_grid=paper_grid)
            )
    return settings


def _row_seed(seed: int, *parts: int) -> int:
    return int(np.random.SeedSequence([seed, *parts]).generate_state(1)[0])


class TableRunner:
    """Runs table settings on score sets, counting each (epoch, clients, grid) only once.

    Args:
      score_sets: ``{epoch: ScoreSet}``.
      repeats: noisy releases per setting (the paper: 100).
      seed: base seed; every setting's noise and the IID partitions derive from it.
      per_client_noise: draw every client's Laplace noise (as 0.2 did); by default the
        server's sum of the clients' noise is drawn at once where it has a closed form,
        the same distribution from far fewer random numbers
        ([`dpauc_tf.simulation.simulate`][]).

    Examples:
        >>> from dpauc_tf.experiments.synthetic import binormal_score_set
        >>> runner = TableRunner({0: binormal_score_set(3000, 800, 0.75)}, repeats=5, seed=0)
        >>> rows = runner.run(["table5"], progress=False)
        >>> sorted({row["num_thresholds"] for row in rows})
        [10, 25, 50, 100, 200]
    """

    def __init__(
        self,
        score_sets: Mapping[int, ScoreSet],
        repeats: int = 100,
        seed: int = 0,
        per_client_noise: bool = False,
    ):
        if repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        if not score_sets:
            raise ValueError("no score sets")
        self.score_sets = dict(score_sets)
        self.repeats = int(repeats)
        self.seed = int(seed)
        self.per_client_noise = bool(per_client_noise)
        self._histograms: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._client_ids: dict[tuple, np.ndarray] = {}
        self._exact: dict[int, float] = {}
        self._tf: dict[tuple[int, int], float] = {}
        # Results kept for the plots: {(table, epoch, setting): AUCResult}.
        self.results: dict[tuple[int, int, Setting], AUCResult] = {}

    # -- cached pieces --------------------------------------------------------------------
    def client_ids(self, epoch: int, partition: str, clients: int) -> np.ndarray:
        """Client id per example: IID (seeded) or non-IID (sorted by score), cached."""
        from dpauc_tf.core import partitions

        key = (epoch, partition, clients)
        if key not in self._client_ids:
            data = self.score_sets[epoch]
            if clients > data.num_examples:
                raise ScoreFileError(
                    f"{clients} clients for {data.num_examples} examples: K must not exceed n"
                )
            if partition == "iid":
                ids = partitions.iid_partition(
                    data.num_examples, clients, seed=_row_seed(self.seed, epoch, clients)
                )
            elif partition == "non-iid":
                ids = partitions.non_iid_partition(data.scores, clients)
            else:
                raise ValueError(f"unknown partition {partition!r}")
            self._client_ids[key] = ids
        return self._client_ids[key]

    def histograms(self, epoch: int, setting: Setting) -> tuple[np.ndarray, np.ndarray]:
        key = (
            epoch,
            setting.partition,
            setting.clients,
            setting.threshold_grid,
            setting.num_thresholds,
        )
        if key not in self._histograms:
            data = self.score_sets[epoch]
            ids = self.client_ids(epoch, setting.partition, setting.clients)
            thresholds = Thresholds.make(setting.num_thresholds, setting.threshold_grid)
            self._histograms[key] = client_histograms(
                data.labels, data.scores, thresholds, ids, setting.clients
            )
        return self._histograms[key]

    def summed_counts(self, epoch: int, grid: Thresholds) -> tuple[np.ndarray, np.ndarray]:
        """The counts of all clients together on ``grid`` (``[T + 1]`` each), cached: what a
        rank-sum release over clients depends on, whatever the partition."""
        key = (epoch, "summed", grid.grid, grid.num_thresholds)
        if key not in self._histograms:
            data = self.score_sets[epoch]
            pos, neg = client_histograms(data.labels, data.scores, grid)
            self._histograms[key] = (pos[0], neg[0])
        return self._histograms[key]

    def exact_auc(self, epoch: int) -> float:
        if epoch not in self._exact:
            data = self.score_sets[epoch]
            self._exact[epoch] = exact_auc(data.labels, data.scores)
        return self._exact[epoch]

    def tf_auc(self, epoch: int, num_thresholds: int) -> float:
        key = (epoch, num_thresholds)
        if key not in self._tf:
            data = self.score_sets[epoch]
            self._tf[key] = tf_auc(data.labels, data.scores, num_thresholds)
        return self._tf[key]

    def exact_roc(self, epoch: int, num_thresholds: int = 1000) -> tuple[np.ndarray, np.ndarray]:
        """The noise-free ROC points on TensorFlow's grid (for plots)."""
        data = self.score_sets[epoch]
        pos, neg = client_histograms(data.labels, data.scores, Thresholds.make(num_thresholds))
        roc = roc_from_confusion(confusion_from_histogram(pos[0], neg[0]))
        return roc.fpr.numpy(), roc.tpr.numpy()

    # -- running --------------------------------------------------------------------------
    def run_setting(self, epoch: int, setting: Setting, seed: int) -> AUCResult:
        """``repeats`` releases of one setting on one epoch's scores."""
        spec = ReleaseArguments(  # the setting's release, seeded by the spec
            setting.epsilon,
            setting.mechanism,
            num_thresholds=setting.num_thresholds,
            mechanism_options=PAPER_ROW_OPTIONS.get(setting.mechanism),
            seed=seed,
        ).spec()
        mechanism = spec.build(setting.clients)
        if mechanism.releases_from_summed_counts:  # rank sums: the summed counts' law
            grid = mechanism.count_thresholds(Thresholds.make(setting.num_thresholds))
            pos, neg = self.summed_counts(epoch, grid)  # the rank sums count on their own grid
            return simulate_rank_sums(
                spec, mechanism, pos, neg, setting.clients, repeats=self.repeats
            )
        if mechanism.capabilities.transforms_data:
            data = self.score_sets[epoch]
            ids = self.client_ids(epoch, setting.partition, setting.clients)
            return simulate_examples(
                spec,
                data.labels,
                data.scores,
                Thresholds.make(setting.num_thresholds, setting.threshold_grid),
                ids,
                setting.clients,
                repeats=self.repeats,
            )
        pos, neg = self.histograms(epoch, setting)
        return simulate(
            spec, pos, neg, repeats=self.repeats, per_client_noise=self.per_client_noise
        )

    def row(self, epoch: int, setting: Setting, result: AUCResult) -> dict[str, Any]:
        capabilities = mechanism_spec(setting.mechanism).capabilities
        # score-noise and the AUC-only releases (rank sums) count on their own grid
        own_grid = capabilities.transforms_data or capabilities.releases == "auc"
        tf_thresholds = 1000 if own_grid else setting.num_thresholds
        return {
            "table": setting.table,
            "epoch": epoch,
            "setting": SETTING_NAMES[setting.partition],
            "clients": setting.clients,
            "num_thresholds": setting.num_thresholds if not own_grid else None,
            "threshold_grid": setting.threshold_grid if not own_grid else None,
            "epsilon": setting.epsilon,
            "mechanism": setting.mechanism,
            "repeats": self.repeats,
            "mean": result.mean,
            "std": result.std,
            "undefined": result.num_undefined,
            "exact_auc": self.exact_auc(epoch),
            "tf_auc": self.tf_auc(epoch, tf_thresholds),
            "tf_num_thresholds": tf_thresholds,
            "guarantee": str(result.statement) if result.statement is not None else None,
        }

    def top_k_rows(self, epoch: int) -> list[dict[str, Any]]:
        """Table 2: guess the K highest-scored examples as positives."""
        data = self.score_sets[epoch]
        order = np.argsort(-data.scores, kind="stable")
        hits = np.cumsum(data.labels[order].astype(np.int64))
        rows = []
        for k in TOP_K:
            if k > data.num_examples:
                break
            found = int(hits[k - 1])
            rows.append(
                {
                    "table": 2,
                    "epoch": epoch,
                    "setting": "central",
                    "clients": 1,
                    "num_thresholds": None,
                    "epsilon": None,
                    "mechanism": "top-k-guess",
                    "top_k": k,
                    "positives_in_top_k": found,
                    "precision": found / k,
                    "recall": found / max(data.num_positives, 1),
                    "positive_rate": data.num_positives / data.num_examples,
                    "mean": None,
                    "std": None,
                    "exact_auc": self.exact_auc(epoch),
                    "tf_auc": self.tf_auc(epoch, 1000),
                }
            )
        return rows

    def run(
        self,
        tables: Iterable[str],
        *,
        paper_grid: str = "reference",
        progress: bool = True,
        keep: Callable[[str, int, Setting], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """All rows of the given tables for every epoch; a tqdm bar counts settings.

        ``keep(table, epoch, setting) -> bool`` selects results to keep in `results`
        (for plots); by default none are kept.
        """
        from tqdm.auto import tqdm

        tables = list(tables)
        work = [
            (table, epoch, position, setting)
            for table in tables
            for epoch in self.score_sets
            for position, setting in enumerate(table_settings(table, paper_grid))
        ]
        rows: list[dict[str, Any]] = []
        for table in tables:
            if table == "table2":
                for epoch in self.score_sets:
                    rows += self.top_k_rows(epoch)
        with tqdm(total=len(work), desc="settings", unit="setting", disable=not progress) as bar:
            for table, epoch, position, setting in work:
                bar.set_postfix_str(f"{table} epoch {epoch} {setting.mechanism}", refresh=False)
                seed = _row_seed(self.seed, setting.table, epoch, position)
                result = self.run_setting(epoch, setting, seed)
                if keep is not None and keep(table, epoch, setting):
                    self.results[(setting.table, epoch, setting)] = result
                rows.append(self.row(epoch, setting, result))
                bar.update()
        return rows


# -- output -------------------------------------------------------------------------------
def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) < 1e4 else f"{value:g}"
    return str(value)


def format_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """One Markdown table per paper table."""
    out = []
    for table in sorted({row["table"] for row in rows}):
        part = [row for row in rows if row["table"] == table]
        out.append(f"### Table {table}\n")
        if table == 2:
            header = ["epoch", "top K", "positives", "precision", "recall", "positive rate"]
            lines = [
                [
                    r["epoch"],
                    r["top_k"],
                    r["positives_in_top_k"],
                    _fmt(r["precision"]),
                    _fmt(r["recall"]),
                    _fmt(r["positive_rate"]),
                ]
                for r in part
            ]
        else:
            header = [
                "epoch",
                "setting",
                "K",
                "|Theta|",
                "grid",
                "eps",
                "mechanism",
                "AUC mean +- std",
                "exact",
                "tf",
            ]
            lines = [
                [
                    r["epoch"],
                    r["setting"],
                    r["clients"],
                    _fmt(r["num_thresholds"]),
                    _fmt(r["threshold_grid"]),
                    f"{r['epsilon']:g}",
                    r["mechanism"],
                    f"{r['mean']:.4f} +- {r['std']:.2g}",
                    _fmt(r["exact_auc"]),
                    _fmt(r["tf_auc"]),
                ]
                for r in part
            ]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
        out.append("")
    return "\n".join(out)


def format_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def format_json(rows: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(list(rows), indent=1)
