"""The paper's experiments, reproduced with the library's own pieces.

* [`synthetic`][]: score sets the size and AUC of the paper's test set;
* [`score_files`][]: reading and validating score files;
* [`ground_truth`][]: exact (scikit-learn) and TensorFlow AUCs;
* [`simulation`][]: count once per client, release every repeat at once;
* [`tables`][]: the settings of the paper's tables 1-5 and their rows;
* [`plots`][]: ROC bands, AUC against epsilon and clients, densities.
"""
