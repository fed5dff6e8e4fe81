"""The paper's experiments, reproduced with the library's own pieces.

* [`synthetic`][]: score sets the size and AUC of the paper's test set;
* [`ground_truth`][]: exact (scikit-learn) and TensorFlow AUCs;
* [`tables`][]: the settings of the paper's tables 1-5 and their rows;
* [`plots`][]: ROC bands, AUC against epsilon and clients, densities.

The score-file readers live in `dpauc_tf.io` and the simulate backend in
[`dpauc_tf.simulation`][] (moved in 0.3).
"""
