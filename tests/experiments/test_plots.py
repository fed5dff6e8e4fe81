"""The plots render: files exist and are not blank."""

import matplotlib.image
import numpy as np

from dpauc_tf.experiments import plots, tables
from dpauc_tf.experiments.synthetic import binormal_score_set


def _not_blank(path):
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 200
    assert image[..., :3].std() > 0.05


def test_table_plots_render(tmp_path):
    runner = tables.TableRunner({2: binormal_score_set(3000, 800, 0.77, seed=0)}, repeats=10)
    rows = runner.run(
        ["table1", "table2", "table3", "table4"],
        progress=False,
        keep=lambda table, epoch, setting: True,
    )
    written = plots.table_plots(runner, rows, tmp_path, epoch=2)
    names = sorted(p.split("/")[-1] for p in written)
    assert names == [
        "auc_vs_epsilon_epoch2.png",
        "roc_bands_epoch2.png",
        "score_densities_epoch2.png",
        "std_vs_clients_epoch2.png",
    ]
    for path in written:
        _not_blank(path)


def test_roc_band_of_one_mechanism(tmp_path):
    fpr = np.tile(np.linspace(0, 1, 11), (5, 1))
    tpr = np.sqrt(fpr)
    path = plots.roc_band((fpr[0], tpr[0]), {"histogram": (fpr, tpr)}, tmp_path / "roc.png")
    _not_blank(path)


def _kept_figure(monkeypatch):
    """The figure a plot function draws (plt.close is made a no-op for the test)."""
    plt = plots._pyplot()
    monkeypatch.setattr(plt, "close", lambda fig=None: None)
    return plt


def _rows(rng, with_repeats):
    rows = []
    for index, name in enumerate(["paper", "histogram", "secure-histogram"]):
        for eps in (0.5, 1.0, 2.0):
            spread = 0.4 / (index + 1) / eps
            aucs = np.clip(0.77 + rng.normal(0, spread, 50), 0, 1)
            row = {"mechanism": name, "epsilon": eps, "exact_auc": 0.77}
            row.update(mean=float(aucs.mean()), std=float(aucs.std()))
            if with_repeats:
                row["aucs"] = aucs
            rows.append(row)
    return rows


def test_auc_vs_epsilon_reads_at_a_glance(tmp_path, monkeypatch):
    """Log error axis within (0, 1], distinct markers, bands only where there are repeats."""
    from matplotlib.collections import PolyCollection

    plt = _kept_figure(monkeypatch)
    rng = np.random.default_rng(0)
    panels = {"repeats": _rows(rng, True), "summaries": _rows(rng, False)}
    _not_blank(plots.auc_vs_epsilon(panels, tmp_path / "e.png", title="t"))
    with_bands, without = plt.gcf().axes
    for ax in (with_bands, without):
        assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
        assert ax.get_ylim()[1] <= 1.0
        lines = [line for line in ax.get_lines() if line.get_label() in plots_names()]
        assert len({line.get_marker() for line in lines}) == 3  # none hides another
        xs = [tuple(line.get_xdata()) for line in lines]
        assert len(set(xs)) == 3  # nudged apart along epsilon
    bands = [c for c in with_bands.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 3
    for band in bands:
        assert band.get_paths()[0].vertices[:, 1].max() <= 1.0
    assert not [c for c in without.collections if isinstance(c, PolyCollection)]
    plt.close("all")


def plots_names():
    return {"paper", "histogram", "secure-histogram"}


def test_roc_band_of_one_curve_has_no_band(tmp_path, monkeypatch):
    from matplotlib.collections import PolyCollection

    plt = _kept_figure(monkeypatch)
    fpr = np.linspace(0, 1, 11)[None, :]
    tpr = np.sqrt(fpr)
    long_title = "ROC curve of a_rather_long_file_name.parquet, histogram, epsilon 1, T = 200"
    plots.roc_band(None, {"histogram": (fpr, tpr)}, tmp_path / "r.png", title=long_title)
    fig = plt.gcf()
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert not [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert "5-95" not in " ".join(t.get_text() for t in ax.get_legend().get_texts())
    fig.canvas.draw()  # the title fits in the figure (wrapped, not clipped)
    box = fig._suptitle.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    plt.close("all")
