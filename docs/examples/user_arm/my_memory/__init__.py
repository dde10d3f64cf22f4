"""An example of a user's own package holding a memrun arm (see docs/arms.md)."""
