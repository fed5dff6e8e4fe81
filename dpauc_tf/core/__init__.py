"""The math core: thresholds, bucket counts, curves and AUC, post-processing, the tree layout.

Nothing here knows about mechanisms, noise or privacy; every layer above imports from here.
"""
