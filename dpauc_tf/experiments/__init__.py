"""The paper's experiments, reproduced with the library's own pieces.

* [`synthetic`][dpauc_tf.experiments.synthetic]: score sets the size and AUC of the paper's test set;
* [`score_files`][dpauc_tf.experiments.score_files]: reading and validating score files;
* [`ground_truth`][dpauc_tf.experiments.ground_truth]: exact (scikit-learn) and TensorFlow AUCs;
* [`simulation`][dpauc_tf.experiments.simulation]: count once per client, release every repeat at once;
* [`tables`][dpauc_tf.experiments.tables]: the settings of the paper's tables 1-5 and their rows;
* [`plots`][dpauc_tf.experiments.plots]: ROC bands, AUC against epsilon and clients, densities.
"""
