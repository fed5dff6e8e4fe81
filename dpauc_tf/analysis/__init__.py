"""Tools about the mechanisms: the empirical audit, noise-family and tree design comparisons."""
