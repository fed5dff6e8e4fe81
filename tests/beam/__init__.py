"""Tests of beam."""
