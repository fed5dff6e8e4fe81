"""Tests of packaging."""
