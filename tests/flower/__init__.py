"""Tests of flower."""
