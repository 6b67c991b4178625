"""compare (work in progress)."""
