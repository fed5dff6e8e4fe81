"""Tests of data_prep."""
