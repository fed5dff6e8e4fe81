"""Tests of noise."""
