"""The cyclic collector's settings while the answer stage's calls are in flight (memrun.pipeline.item_stages)."""

from __future__ import annotations

import gc

import pytest

from memrun.pipeline.item_stages import CALLS_GC_THRESHOLD, calls_collector


def test_raised_inside_and_restored_after() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    with calls_collector():
        assert gc.get_threshold() == (CALLS_GC_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > frozen  # what start-up built is not walked again
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_restored_when_the_stage_raises() -> None:
    before = gc.get_threshold()
    with pytest.raises(KeyboardInterrupt), calls_collector():
        raise KeyboardInterrupt
    assert gc.get_threshold() == before


def test_a_higher_threshold_already_set_is_kept() -> None:
    before = gc.get_threshold()
    gc.set_threshold(CALLS_GC_THRESHOLD * 2, *before[1:])
    try:
        with calls_collector():
            assert gc.get_threshold()[0] == CALLS_GC_THRESHOLD * 2
    finally:
        gc.set_threshold(*before)


def test_what_the_stage_left_alive_joins_the_oldest_generation() -> None:
    """Rows and replies made during the calls are not walked by the first young collection after
    them (at the restored threshold, a cold run's whole young generation): they leave it on exit."""
    with calls_collector():
        kept = [{"row": i} for i in range(1000)]  # containers made in the stage and kept
    young, oldest = gc.get_objects(generation=0), gc.get_objects(generation=2)
    assert not any(obj is kept for obj in young)
    assert any(obj is kept for obj in oldest)
    assert gc.get_count()[0] < 1000  # counted from its exit on, not from the stage's start
