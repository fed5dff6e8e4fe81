"""Models for dpauc_tf's experiments: Wide & Deep for Criteo and its training entry point."""
