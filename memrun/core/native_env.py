"""How the native libraries a memrun process loads should behave, set before they load.

numpy and pyarrow read a few environment variables once, when their shared libraries load.
Two of their defaults cost a short process CPU it never uses; the ``memrun`` command sets
them (:func:`settle`, called by :func:`memrun.cli.console` before anything imports numpy
or pyarrow) unless the user's environment already names them:

* ``OPENBLAS_THREAD_TIMEOUT=4``: numpy's OpenBLAS (the scipy-openblas wheel) starts one
  worker thread per extra core when numpy is imported, and each spins waiting for work for
  2^28 cycles (~0.1 s) after it starts and after every BLAS call before it sleeps. memrun's
  runs make few or no BLAS calls (the bootstrap's matrix-vector products, the dense arm's
  products): the spinning was ~0.1 s of CPU on ``import numpy`` alone, and ~0.19 s of a
  cached re-run on a busy 2-core machine, taken from the threads that do the work. At 4
  (2^4 cycles, OpenBLAS's lowest value) a worker sleeps at once and is woken for the next
  product; the products still use every core.
* ``MIMALLOC_ALLOW_THP=0``: pyarrow allocates with its bundled mimalloc, which asks the
  kernel for transparent huge pages over its 1 GiB arena (``madvise(MADV_HUGEPAGE)``). The
  first touch of each 2 MiB page then has the kernel clear all of it: 20-140 ms of system
  time in a run's first conversion of rows to Arrow (the writer's), though a run's Arrow
  data is a few MiB. With 4 KiB pages only what is used is cleared.

The settings reach the processes a run starts (a sweep's joblib, submitit or Ray workers)
through the environment. A script that imports memrun as a library decides for itself: it
may have loaded numpy already, so :func:`memrun.run` does not change its environment.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

SETTINGS: dict[str, str] = {
    "OPENBLAS_THREAD_TIMEOUT": "4",
    "MIMALLOC_ALLOW_THP": "0",
}
"""Environment variable -> the value a memrun process uses when the user set none."""


def settle(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """Set each of :data:`SETTINGS` in ``environ`` that it does not name (a user's own value,
    even an empty one, is kept). Returns the variables set, name -> value. Takes effect for
    a library only if it has not loaded yet in this process; call it from the main thread at
    start-up (another thread's import may read the environment meanwhile)."""
    added = {name: value for name, value in SETTINGS.items() if name not in environ}
    environ.update(added)
    return added
