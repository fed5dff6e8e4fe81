"""Tests of simulation."""
