"""Reporting and fixes: findings rendered (`output.py`, `ci_reports.py`), a
baseline of accepted findings (`baseline.py`), fixes applied to files
(`fixes.py`) and noqa comments written (`noqa_writer.py`)."""
