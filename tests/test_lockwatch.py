"""The lock watch's rule for a wait after a statement, on polls written by hand: the migrate
tests' proof that no writer waits for the verification rests on it, and the server cannot be
made to wake a writer late on demand.
"""

from __future__ import annotations

from typing import Any

from tests.writeload import WAKE_GRACE, LockWatch, Poll

MDL = "Waiting for table metadata lock"


def watch_of(*polls: tuple[float, dict[int, str]]) -> LockWatch:
    """A watch that saw ``polls`` (each asked at its time, answered 1 ms later)."""
    srv: Any = None
    load: Any = None
    watch = LockWatch(srv, load)
    watch.polls = [Poll(t, t + 0.001, dict(w)) for t, w in polls]
    return watch


def test_the_tail_of_a_wait_that_ended_is_not_a_new_one() -> None:
    # the writer waited for the ALTER; a poll asked before the end answered after it, and the
    # next one, asked after, still found the woken writer in its old state
    watch = watch_of((0.90, {}), (0.99, {7: MDL}), (1.0005, {7: MDL}), (1.01, {}), (1.02, {}))
    assert watch.waits(1.0)  # the plain question counts them ...
    assert watch.waits_begun(1.0) == []  # ... the episode rule does not


def test_a_wait_first_seen_free_after_the_end_counts() -> None:
    watch = watch_of((0.99, {7: MDL}), (1.01, {}), (1.02, {7: MDL}), (1.03, {7: MDL}), (1.04, {}))
    assert watch.waits_begun(1.0) == [(1.021, 7, MDL), (1.031, 7, MDL)]


def test_a_wait_that_goes_on_past_the_grace_counts_though_it_began_before() -> None:
    later = 1.0 + WAKE_GRACE + 0.01
    watch = watch_of((0.99, {7: MDL}), (1.01, {7: MDL}), (later, {7: MDL}), (later + 0.01, {}))
    assert [t for t, _, _ in watch.waits_begun(1.0)] == [1.011, later + 0.001]
    # ... unless it ended inside the grace
    watch = watch_of((0.99, {7: MDL}), (1.01, {7: MDL}), (later, {}))
    assert watch.waits_begun(1.0) == []


def test_writers_are_followed_each_on_their_own() -> None:
    # writer 8 is free after the end and waits again; writer 7 only shows its old wait
    watch = watch_of((0.99, {7: MDL, 8: MDL}), (1.01, {7: MDL}), (1.02, {8: MDL}), (1.03, {}))
    assert watch.waits_begun(1.0) == [(1.021, 8, MDL)]
