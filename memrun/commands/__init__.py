"""Subcommands registered in :data:`memrun.cli.SUBCOMMANDS` (each ``main(argv) -> exit code``)."""
