"""bench.profile_shares: busy samples per process and stage from py-spy's raw stacks."""

from __future__ import annotations

from pathlib import Path

from bench.profile_shares import busy_samples

BRIDGE = 'process 10:"python -m bridge.cli run";thread (11): mq-example'
CHILD = 'process 10:"python -m bridge.cli run";process 12:"python -m bridge.parse.child"'


def test_busy_samples_go_to_the_innermost_stage_and_waits_to_none(tmp_path: Path) -> None:
    stacks = tmp_path / "d.txt"
    stacks.write_text(
        "\n".join(
            [
                f"{BRIDGE};MqWorker._loop (bridge/mq/worker.py:267);"
                "RecordBuilder.build (bridge/mq/records.py:216);"
                "KafkaProducer._produce_all (bridge/mq/producer.py:298) 7",
                f"{BRIDGE};MqWorker._loop (bridge/mq/worker.py:245);"
                "Condition.wait (threading.py:331) 50",
                f"{BRIDGE};KafkaProducer._confirm (bridge/mq/producer.py:281) 40",
                f"{CHILD};main (child.py:218);EventReader._fill (framing.py:100);"
                "EntryEncoder.encode (wire.py:56) 3",
                f"{CHILD};main (child.py:218);helper (child.py:9) 2",
            ]
        )
    )
    shares = busy_samples(stacks)
    assert shares["bridge"] == {"Kafka produce calls": 7}
    assert shares["child"] == {"wire encoding": 3, "other": 2}
