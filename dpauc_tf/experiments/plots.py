"""PNG plots of the experiments (matplotlib, Agg backend: no display needed).

* [`roc_band`][]: the exact ROC curve and, per mechanism, the band of its noisy curves
  (pointwise 5-95 % of the TPR at a common FPR grid, min-max under 20 curves) and their
  median, or the one noisy curve;
* [`auc_vs_epsilon`][]: the AUC's error against epsilon (log scale), one line per
  mechanism, with a band only where there are repeats;
* [`std_vs_clients`][]: the std of the AUC against the number of clients;
* [`score_densities`][]: densities of the positive and negative scores (table 2's argument);
* [`table_plots`][]: all of the above for a [`TableRunner`][dpauc_tf.experiments.tables.TableRunner].

Examples:
    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "d.png")
    >>> score_densities(np.array([0, 1, 0, 1]), np.array([0.1, 0.8, 0.3, 0.6]), path)
    '...d.png'
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpauc_tf.mechanisms import mechanism_class

_FPR_GRID = np.linspace(0.0, 1.0, 201)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _interpolated_tpr(fpr: np.ndarray, tpr: np.ndarray) -> np.ndarray:
    """TPR of each curve ``[R, T]`` (sorted by FPR) at `_FPR_GRID` -> ``[R, 201]``."""
    fpr = np.atleast_2d(fpr)
    tpr = np.atleast_2d(tpr)
    return np.stack([np.interp(_FPR_GRID, f, t) for f, t in zip(fpr, tpr, strict=True)])


def roc_band(
    exact: tuple[np.ndarray, np.ndarray] | None,
    noisy: Mapping[str, tuple[np.ndarray, np.ndarray]],
    path: str | os.PathLike,
    title: str = "",
) -> str:
    """Exact ROC plus, for each mechanism, its noisy curves: the 5-95 % band and median of
    20 or more, the min-max band and median of 2 to 19, the curve itself for one
    (``exact=None``: the noisy curves only, for a plot that may be published)."""
    plt = _pyplot()
    fig = roc_band_figure(exact, noisy, title)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def roc_band_figure(
    exact: tuple[np.ndarray, np.ndarray] | None,
    noisy: Mapping[str, tuple[np.ndarray, np.ndarray]],
    title: str = "",
):
    """The matplotlib figure of [`roc_band`][] (the title wrapped to the figure's width)."""
    plt = _pyplot()
    names = list(noisy)
    cols = min(3, max(1, len(names)))
    rows = -(-max(1, len(names)) // cols)
    width = 4.2 * cols
    fig, axes = plt.subplots(
        rows, cols, figsize=(width, 4.0 * rows), squeeze=False, layout="constrained"
    )
    for ax in axes.ravel()[len(names) :]:
        ax.axis("off")
    for ax, name in zip(axes.ravel(), names, strict=False):
        tprs = _interpolated_tpr(*noisy[name])
        count = len(tprs)
        if count == 1:
            ax.plot(_FPR_GRID, tprs[0], color="tab:orange", lw=1.5, label="noisy release")
        else:
            band = (5, 95) if count >= 20 else (0, 100)
            low, mid, high = np.percentile(tprs, [band[0], 50, band[1]], axis=0)
            what = "5-95 %" if count >= 20 else "min-max"
            ax.fill_between(
                _FPR_GRID, low, high, alpha=0.3, color="tab:orange", label=f"noisy {what}"
            )
            ax.plot(_FPR_GRID, mid, color="tab:orange", lw=1, label="noisy median")
        if exact is not None:
            ax.plot(exact[0], exact[1], color="black", lw=1.5, label="exact")
        ax.plot([0, 1], [0, 1], color="grey", lw=0.5, ls=":")
        ax.set(
            title=f"{name} ({count} curve{'s' if count != 1 else ''})",
            xlabel="FPR",
            ylabel="TPR",
            xlim=(0, 1),
            ylim=(0, 1),
        )
        ax.legend(loc="lower right", fontsize=8)
    if title:  # about 8 characters per inch at 12 points: wrapped, never clipped
        fig.suptitle("\n".join(textwrap.wrap(title, width=max(20, int(width * 8)))))
    return fig


def _epsilon_ticks(ax, values: Sequence[float]) -> None:
    """Plain tick labels at the epsilons used (no overlapping log-scale minor labels)."""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    if values:
        ax.xaxis.set_major_locator(FixedLocator(list(values)))
        ax.xaxis.set_major_formatter(lambda x, _pos: f"{x:g}")
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


# Distinct marker and line style per mechanism, so that lines on top of each other stay visible.
_STYLES = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("P", "--"), ("X", "-.")]
_ERROR_FLOOR = 1e-5  # |AUC - exact| below this is drawn at it (a log axis has no 0)


def _errors(row: Mapping[str, Any]) -> tuple[float, float | None, float | None]:
    """(point, band low, band high) of one row's error against the exact AUC.

    With the repeats' AUCs (``row["aucs"]``): the median |AUC - exact| and its 5-95 %
    percentiles (every release counts; NaN releases are left out). Without them: the root
    mean square error ``sqrt((mean - exact)^2 + std^2)`` and no band.
    """
    exact = row["exact_auc"]
    aucs = row.get("aucs")
    if aucs is not None:
        values = np.abs(np.asarray(aucs, dtype=np.float64).ravel() - exact)
        values = values[np.isfinite(values)]
        if values.size > 1:
            low, mid, high = np.percentile(values, [5, 50, 95])
            return max(mid, _ERROR_FLOOR), max(low, _ERROR_FLOOR), max(high, _ERROR_FLOOR)
        if values.size == 1:
            return max(float(values[0]), _ERROR_FLOOR), None, None
    if row.get("mean") is None:
        return float("nan"), None, None
    rmse = float(np.hypot(row["mean"] - exact, row.get("std") or 0.0))
    return max(rmse, _ERROR_FLOOR), None, None


def auc_vs_epsilon(
    panels: Mapping[str, Sequence[Mapping[str, Any]]], path: str | os.PathLike, title: str = ""
) -> str:
    """The AUC's error against epsilon (log-log), one line per mechanism, one panel per group.

    Each row names ``mechanism``, ``epsilon``, ``exact_auc`` and either the repeats' ``aucs``
    (drawn: the median |AUC - exact| with its 5-95 % band, shaded) or ``mean`` and ``std``
    (drawn: the root mean square error, no band). An error cannot pass 1, so no band does;
    the mechanisms get distinct markers and line styles, and are nudged apart along epsilon so
    that equal errors do not hide each other.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.8), squeeze=False)
    for ax, (panel_title, rows) in zip(axes.ravel(), panels.items(), strict=True):
        names = list(dict.fromkeys(r["mechanism"] for r in rows))
        with_bands = any(r.get("aucs") is not None for r in rows)
        for index, name in enumerate(names):
            part = sorted((r for r in rows if r["mechanism"] == name), key=lambda r: r["epsilon"])
            nudge = 1.0 + 0.04 * (index - (len(names) - 1) / 2)  # a few % along a log axis
            x = np.array([r["epsilon"] for r in part], dtype=np.float64) * nudge
            points = [_errors(r) for r in part]
            marker, style = _STYLES[index % len(_STYLES)]
            (line,) = ax.plot(
                x, [p[0] for p in points], marker=marker, ls=style, lw=1.3, ms=6, label=name
            )
            if all(p[1] is not None for p in points):
                ax.fill_between(
                    x, [p[1] for p in points], [p[2] for p in points], color=line.get_color(),
                    alpha=0.15, lw=0,
                )  # fmt: skip
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="epsilon (total, one release)",
            ylabel=("|AUC - exact AUC|: median, 5-95 % band" if with_bands else "RMSE of the AUC"),
            title=panel_title,
        )
        low, high = ax.get_ylim()
        ax.set_ylim(max(low, _ERROR_FLOOR / 2), min(max(high, 0.01), 1.0))
        ax.grid(True, which="major", alpha=0.3)
        _epsilon_ticks(ax, sorted({r["epsilon"] for r in rows}))
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
        fig.tight_layout(rect=(0, 0, 1, 0.95))
    else:
        fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def std_vs_clients(
    rows: Sequence[Mapping[str, Any]], path: str | os.PathLike, title: str = ""
) -> str:
    """Std of the AUC against the number of clients, one line per mechanism."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name in dict.fromkeys(r["mechanism"] for r in rows):
        part = sorted((r for r in rows if r["mechanism"] == name), key=lambda r: r["clients"])
        ax.plot([r["clients"] for r in part], [r["std"] for r in part], marker="o", label=name)
    ax.set(xscale="log", yscale="log", xlabel="clients K", ylabel="std of the AUC", title=title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def score_densities(
    labels: np.ndarray, scores: np.ndarray, path: str | os.PathLike, title: str = ""
) -> str:
    """Histogram densities of the positives' and the negatives' scores."""
    plt = _pyplot()
    labels = np.asarray(labels).ravel()
    scores = np.asarray(scores).ravel()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    bins = np.linspace(0.0, 1.0, 101)
    ax.hist(scores[labels == 0], bins=bins, density=True, alpha=0.5, label="negatives")
    ax.hist(scores[labels == 1], bins=bins, density=True, alpha=0.5, label="positives")
    ax.set(xlabel="score", ylabel="density", title=title or "score densities")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def table_plots(
    runner, rows: Sequence[Mapping[str, Any]], directory: Path, epoch: int
) -> list[str]:
    """The plots for the rows of a table run (results of ``epoch`` kept by the runner)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    tables = {r["table"] for r in rows}
    if 2 in tables:
        data = runner.score_sets[epoch]
        written.append(
            score_densities(
                data.labels,
                data.scores,
                directory / f"score_densities_epoch{epoch}.png",
                title=f"score densities, epoch {epoch}",
            )
        )
    # ROC bands at epsilon = 1, IID: one panel per mechanism, from table 4 with K = 1000
    # where it has the mechanism (local noise grows with K), else from tables 1 / 3 (K = 10).
    bands: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    preference = {4: 0, 1: 1, 3: 2}
    candidates = sorted(
        (
            (preference[table], -setting.clients, setting.mechanism, setting, result)
            for (table, result_epoch, setting), result in runner.results.items()
            if result_epoch == epoch
            and table in preference
            and setting.epsilon == 1.0
            and setting.partition == "iid"
            and mechanism_class(setting.mechanism).capabilities.releases == "curve"  # a band
        ),
        key=lambda item: item[:3],
    )
    for _, _, name, setting, result in candidates:
        label = f"{name}, K={setting.clients}"
        if mechanism_class(name).roc_note:
            label += " (" + mechanism_class(name).roc_note.split(";")[0] + ")"
        if not any(key.startswith(f"{name},") for key in bands):
            bands[label] = (result.fpr, result.tpr)
    if bands:
        written.append(
            roc_band(
                runner.exact_roc(epoch),
                bands,
                directory / f"roc_bands_epoch{epoch}.png",
                title=f"ROC curves, epoch {epoch}, epsilon = 1, IID clients",
            )
        )
    from dpauc_tf.experiments.tables import PROJECT_MECHANISMS as project

    panels = {}
    few = [
        r
        for r in rows
        if r["epoch"] == epoch
        and r["setting"] == "IID"
        and r["clients"] == 10
        and (r["table"] == 4 or (r["table"] in (1, 3) and r["mechanism"] not in project))
    ]
    if few:
        panels["10 IID clients (tables 1, 3, 4)"] = few
    many = [
        r
        for r in rows
        if r["table"] == 4
        and r["epoch"] == epoch
        and r["setting"] == "IID"
        and r["clients"] == 1000
    ]
    if many:
        panels["1000 IID clients (table 4)"] = many
    if panels:
        written.append(
            auc_vs_epsilon(
                panels,
                directory / f"auc_vs_epsilon_epoch{epoch}.png",
                title=f"Error of the AUC against the exact AUC vs epsilon, epoch {epoch}",
            )
        )
    client_rows = [
        r
        for r in rows
        if r["table"] == 4 and r["epoch"] == epoch and r["setting"] == "IID" and r["epsilon"] == 1.0
    ]
    if client_rows:
        written.append(
            std_vs_clients(
                client_rows,
                directory / f"std_vs_clients_epoch{epoch}.png",
                title=f"std of the AUC vs clients, epoch {epoch}, IID, epsilon = 1",
            )
        )
    return written
