"""Criteo data preparation for dpauc_tf: reading, preprocessing, synthetic data, shards."""
