"""Subcommands of the ``memrun`` console script (each ``main(argv) -> exit code``)."""
