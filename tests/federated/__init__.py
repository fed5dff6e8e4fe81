"""Tests of federated."""
