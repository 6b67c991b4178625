"""arm (work in progress)."""
