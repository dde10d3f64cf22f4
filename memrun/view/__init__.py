"""``memrun view``: a local web app over a folder of runs (see :mod:`memrun.view.app`)."""
