"""`chorus doctor`: checks of the configuration, Redis, the model endpoints and every enabled platform.

Each check returns a `Check` value (name, ok, detail, fix); the command prints
them and exits non-zero when any failed. Secrets never appear in the output.
"""
from gateway.doctor.checks import SUMMARY_WINDOW_FIX, Check, run_checks, summary_window_problem

__all__ = ["SUMMARY_WINDOW_FIX", "Check", "run_checks", "summary_window_problem"]
