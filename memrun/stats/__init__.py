"""Pure statistics for memrun."""
