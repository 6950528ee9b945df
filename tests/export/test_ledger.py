"""The publisher's ledger and the acknowledgement parser: each message counted once,
never dropped while another send of it may still be stored."""

from __future__ import annotations

import json

from ringtool.export.accounting import ExportCounters
from ringtool.export.acks import Answer, classify
from ringtool.export.ledger import Ledger
from ringtool.export.wire import Message

OK = Answer("ok")
DUP = Answer("ok", duplicate=True)
FULL = Answer("refused", why="maximum bytes exceeded")
LATER = Answer("retry", why="no responders")


def msg(n: int, cpu: int = 0, count: int = 10) -> Message:
    return Message("s", {"Nats-Msg-Id": f"m{n}"}, b"x" * count, cpu, count)


def totals(c: ExportCounters) -> tuple[int, int]:
    snap = c.snapshot()
    return snap["exported"], snap["export_dropped"]


def test_first_ok_counts_late_answers_to_resends_do_not() -> None:
    c = ExportCounters(1)
    led = Ledger(c)
    m = msg(1)
    led.add(m)
    assert led.next_to_send() is m
    led.sent(m, 0.0)
    assert led.expire(10.0, 5.0) == 1  # no answer in time: queued again
    assert led.next_to_send() is m
    led.sent(m, 10.0)
    assert led.answer("m1", OK)
    assert not led.answer("m1", DUP)  # the resend's answer: recognised, not counted
    assert totals(c) == (10, 0)
    snap = c.snapshot()
    assert snap["export_duplicates"] == 1 and snap["export_resends"] == 1
    assert led.waiting == 0


def test_refusal_waits_while_another_send_may_be_stored() -> None:
    c = ExportCounters(1)
    led = Ledger(c)
    m = msg(1)
    led.add(m)
    led.sent(led.next_to_send() or m, 0.0)
    led.expire(10.0, 5.0)
    led.sent(led.next_to_send() or m, 10.0)  # two sends outstanding
    assert not led.answer("m1", FULL)  # the first refused, the second may be stored
    assert totals(c) == (0, 0)
    assert led.answer("m1", OK)  # it was
    assert totals(c) == (10, 0)


def test_refused_alone_is_final_and_retry_queues_again() -> None:
    c = ExportCounters(2)
    led = Ledger(c)
    a, b = msg(1, cpu=0), msg(2, cpu=1, count=7)
    led.add(a)
    led.add(b)
    led.sent(led.next_to_send() or a, 0.0)
    led.sent(led.next_to_send() or b, 0.0)
    assert led.answer("m1", FULL)
    assert led.refusals == ["maximum bytes exceeded"]
    assert not led.answer("m2", LATER)
    assert led.next_to_send() is b  # sent again later
    assert c.snapshot()["export_dropped_by_reason"]["refused"] == 10
    assert c.snapshot()["export_dropped_per_cpu"] == [10, 0]


def test_give_up_tells_unconfirmed_from_unsent() -> None:
    c = ExportCounters(1)
    led = Ledger(c)
    a, b = msg(1), msg(2, count=3)
    led.add(a)
    led.add(b)
    led.sent(led.next_to_send() or a, 0.0)
    led.connection_lost()  # the answer to `a` will never come
    led.give_up()
    reasons = c.snapshot()["export_dropped_by_reason"]
    assert reasons["unconfirmed"] == 10 and reasons["unsent"] == 3
    assert led.waiting == 0 and totals(c) == (0, 13)


def test_classify_answers() -> None:
    def ans(obj: object) -> Answer:
        return classify(json.dumps(obj).encode(), None)

    assert ans({"stream": "S", "seq": 4}) == OK
    assert ans({"stream": "S", "seq": 4, "duplicate": True}) == DUP
    store = {"code": 503, "err_code": 10077, "description": "maximum bytes exceeded"}
    assert ans({"error": store}).outcome == "refused"
    assert ans({"error": {"code": 503, "err_code": 10008, "description": "x"}}).outcome == "retry"
    assert ans({"error": {"code": 400, "err_code": 10054}}).outcome == "refused"
    assert classify(b"", {"Status": "503"}).outcome == "retry"
    assert classify(b"not json", None).outcome == "retry"
    assert classify(b"[1]", None).outcome == "retry"


def test_a_send_after_a_reconnect_is_counted_as_a_resend() -> None:
    c = ExportCounters(1)
    led = Ledger(c)
    m1, m2 = msg(1), msg(2)
    led.add(m1)
    led.add(m2)
    for m in (led.next_to_send(), led.next_to_send()):
        assert m is not None
        led.sent(m, 0.0)
    led.connection_lost()  # the broker died with both in flight (maybe stored)
    again = led.next_to_send()
    assert again is m1
    led.sent(m1, 1.0)  # on the new connection: the stream may have it already
    assert led.answer("m1", DUP)  # stored before the crash: exported once, a duplicate
    assert led.expire(2.0, 5.0) == 0
    snap = c.snapshot()
    assert snap["export_resends"] == 1 and snap["export_duplicates"] == 1
    assert snap["export_duplicates"] <= snap["export_resends"]  # was 1 > 0 under load
    assert led.next_to_send() is m2
    led.sent(m2, 3.0)
    assert led.answer("m2", OK)
    assert c.snapshot()["export_resends"] == 2 and totals(c) == (20, 0)
