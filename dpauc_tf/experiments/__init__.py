"""The paper's experiments, reproduced with the library's own pieces.

* :mod:`~dpauc_tf.experiments.synthetic`: score sets the size and AUC of the paper's test set;
* :mod:`~dpauc_tf.experiments.ground_truth`: exact (scikit-learn) and TensorFlow AUCs;
* :mod:`~dpauc_tf.experiments.tables`: the settings of the paper's tables 1-5 and their rows;
* :mod:`~dpauc_tf.experiments.plots`: ROC bands, AUC against epsilon and clients, densities.

The score-file readers live in :mod:`dpauc_tf.io` and the simulate backend in
:mod:`dpauc_tf.simulation` (moved in 0.3).
"""
