"""Measured benchmarks: run `python -m benchmarks.<name>`."""
