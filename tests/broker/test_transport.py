"""The embedded broker transport, exercised through kombu with real threads and real files.

kombu's ``filesystem://`` transport made a message file visible before its body was written; a consumer reading it
then failed to decode it and the worker died. These tests publish large messages (their encoding takes long enough
to open that window wide) while consumers read, and fail on that transport.
"""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
from kombu import Connection, Exchange, Queue

import trainer_portal.broker  # noqa: F401  (registers atomicfs://)
from trainer_portal.broker import queue_size

MESSAGES = 10
PRODUCERS = 4


# The embedded mode's broker (its default is checked in tests/test_settings.py; CI runs the rest on Redis).
URL = "atomicfs://"


def _options(folder: Path) -> dict:
    # The embedded broker as settings configure it, in a private folder.
    options = {
        "polling_interval": 0.05,
        "data_folder_in": str(folder / "broker"),
        "data_folder_out": str(folder / "broker"),
        "processed_folder": str(folder / "broker-processed"),
        "control_folder": str(folder / "broker-control"),
    }
    for key in ("data_folder_in", "processed_folder", "control_folder"):
        Path(options[key]).mkdir(parents=True, exist_ok=True)
    return options


def _connection(folder: Path) -> Connection:
    return Connection(URL, transport_options=_options(folder))


def _produce(url: str, options: dict, producer: int) -> None:
    # In a process of its own, as the web server and the worker are: a thread would hold the GIL while encoding.
    # (Importing this module in the spawned process registered atomicfs:// again.)

    with Connection(url, transport_options=options) as conn:
        publisher = conn.Producer()
        queue = Queue("hammer", routing_key="hammer")
        for index in range(MESSAGES):
            publisher.publish(_payload(producer, index), routing_key="hammer", declare=[queue])


def _payload(producer: int, index: int) -> dict:
    # Megabytes of escaped text: writing the file takes long enough to open the window in which a non-atomic write
    # is visible half-done.
    return {"producer": producer, "index": index, "filler": "é\"" * 1_500_000}


def test_it_never_hands_a_consumer_a_half_written_message(tmp_path):
    received: list[tuple[int, int]] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def consume() -> None:
        try:
            with _connection(tmp_path) as conn:
                queue = Queue("hammer")(conn.default_channel)
                queue.declare()
                while True:
                    message = queue.get(no_ack=True)
                    if message is None:
                        if done.is_set():
                            return
                        continue
                    received.append((message.payload["producer"], message.payload["index"]))
        except BaseException as exc:  # the defect: a decode error escapes the consumer
            errors.append(exc)

    consumers = [threading.Thread(target=consume) for _ in range(2)]
    spawn = multiprocessing.get_context("spawn")
    producers = [
        spawn.Process(target=_produce, args=(URL, _options(tmp_path), number))
        for number in range(PRODUCERS)
    ]
    for worker in consumers + producers:
        worker.start()
    for process in producers:
        process.join(120)
        assert process.exitcode == 0
    done.set()
    for thread in consumers:
        thread.join(60)

    assert errors == []
    # None lost, none delivered twice.
    assert sorted(received) == sorted((p, i) for p in range(PRODUCERS) for i in range(MESSAGES))


def test_it_sets_aside_an_undecodable_message_and_delivers_the_next(tmp_path):
    with _connection(tmp_path) as conn:
        queue = conn.SimpleQueue("mixed")
        (tmp_path / "broker" / "00000000000000000001_junk.mixed.msg").write_bytes(b"{not json")
        queue.put({"ok": True})
        message = queue.get(block=True, timeout=5)
        assert message.payload == {"ok": True}
        message.ack()
        assert queue_size(tmp_path / "broker", "mixed") == 0
        rejected = [path.name for path in (tmp_path / "broker" / ".rejected").iterdir()]
        assert rejected == ["00000000000000000001_junk.mixed.msg"]
        queue.close()


def test_it_delivers_in_publish_order_and_counts_the_queue(tmp_path):
    with _connection(tmp_path) as conn:
        queue = conn.SimpleQueue("ordered")
        for index in range(20):
            queue.put({"index": index})
        assert queue_size(tmp_path / "broker", "ordered") == 20
        assert len(queue) == 20
        got = []
        for _ in range(20):
            message = queue.get(block=True, timeout=5)
            got.append(message.payload["index"])
            message.ack()
        assert got == list(range(20))
        queue.close()


@pytest.mark.parametrize("binders", [8])
def test_it_keeps_every_queue_bound_when_many_bind_at_once(tmp_path, binders):
    # kombu rewrote the exchange table in place: concurrent binders lost each other's queue or read it empty.
    errors: list[BaseException] = []

    def bind(number: int) -> None:
        try:
            with _connection(tmp_path) as conn:
                exchange = Exchange("shared", type="fanout")
                for round_ in range(10):
                    Queue(f"q-{number}-{round_}", exchange)(conn.default_channel).declare()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=bind, args=(n,)) for n in range(binders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with _connection(tmp_path) as conn:
        table = conn.default_channel.get_table("shared")
    assert {row.queue for row in table} == {f"q-{n}-{r}" for n in range(binders) for r in range(10)}


def test_a_missing_queue_folder_is_an_error_not_a_new_folder(tmp_path):
    from kombu.exceptions import ChannelError

    options = {**_options(tmp_path), "data_folder_out": str(tmp_path / "nowhere" / "broker")}
    with Connection(URL, transport_options=options) as conn, pytest.raises(ChannelError, match="Cannot add a message"):
        conn.SimpleQueue("q").put({"x": 1})
    assert not (tmp_path / "nowhere").exists()
