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
