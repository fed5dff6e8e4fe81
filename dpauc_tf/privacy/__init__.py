"""Privacy statements, accounting (dp-accounting), Skellam Renyi bounds, calibration, ledger."""
