"""``memrun report``: one self-contained HTML page per run, comparison or sweep.

:mod:`memrun.report.html.run_page`, :mod:`memrun.report.html.compare_page` and
:mod:`memrun.report.html.sweep_page` build each page's context from the same models the
terminal renders (:mod:`memrun.report.model`, ``Comparison.to_dict()``, :mod:`memrun.jobs.sweep`);
:mod:`memrun.report.html.common` holds the jinja2 environment and the embedded rows.
"""
