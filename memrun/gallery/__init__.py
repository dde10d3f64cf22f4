"""The reproduction gallery: published memory-retrieval numbers as checked claims.

One YAML file per published number (or table) under ``memrun/gallery/entries/``: where it
was published, its value(s), the memrun overrides that re-derive it, the tolerance and
why, the data it needs and, optionally, the publisher's per-item results file to diff
against (:mod:`memrun.gallery.entries`). ``memrun gallery run`` runs each entry and says
PASS, FAIL, NOT-REPRODUCIBLE (with the reason) or NEEDS-DATA (:mod:`memrun.gallery.check`).
"""
