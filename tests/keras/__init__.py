"""Tests of keras."""
