"""The paper's experiments, reproduced with the library's own pieces.

* :mod:`~dpauc_tf.experiments.synthetic`: score sets the size and AUC of the paper's test set;
* :mod:`~dpauc_tf.experiments.score_files`: reading and validating score files;
* :mod:`~dpauc_tf.experiments.ground_truth`: exact (scikit-learn) and TensorFlow AUCs;
* :mod:`~dpauc_tf.experiments.simulation`: count once per client, release every repeat at once;
* :mod:`~dpauc_tf.experiments.tables`: the settings of the paper's tables 1-5 and their rows;
* :mod:`~dpauc_tf.experiments.plots`: ROC bands, AUC against epsilon and clients, densities.
"""
