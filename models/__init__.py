"""Models for dpauc_tf's experiments: Wide & Deep for Criteo, its training entry point and the
demo (``python -m models.demo``, what ``bash run.sh demo`` runs). Not in the wheel."""
