"""kar3 (work in progress)."""
