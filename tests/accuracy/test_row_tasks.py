"""Each row runs in a worker's task, never on the answer stage's own (memrun.accuracy.row_queue):
a request's timeout (memrun.llm.deadlines, kept per task) is that request's alone."""

from __future__ import annotations

import time

from accuracy.helpers import rows, run_memrun
from servers.openai_server import Reply


def test_requests_that_hang_time_out_each_in_its_own_row(llm_env, tmp_path):
    # A history retrieved while no call was in flight found the slots free, and its rows
    # (started eagerly) sent their first requests on the stage's own task: they shared its deadline, the first
    # to end cleared it, and a request that hung waited the server's 8 s (or the stage's own
    # task was cancelled for them). The first calls answer: the endpoint is known to answer,
    # so a timeout is sent again, not the end of the run.
    llm_env.script(*[Reply.ok("answer")] * 3, *[Reply.ok("late", delay=8.0)] * 27)
    t0 = time.monotonic()
    rc, out = run_memrun(tmp_path, "judge=exact", "concurrency=64", "request_timeout_s=0.5",
                         "arm._target_=accuracy.answering_arm.SlowIngestArm")
    elapsed = time.monotonic() - t0
    assert rc == 0
    final = rows(out)
    assert len(final) == 30 and all(r["error"] is None for r in final)  # each late one was sent again
    assert elapsed < 6.0, elapsed
