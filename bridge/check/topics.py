"""The topics a destination writes to, as its router names them: what the Kafka and the
exactly-once checks look at."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# ConfigResource is public in confluent_kafka.admin; its stubs do not export it.
from bridge.config import DestinationConfig
from bridge.mq.routing import CanalTopicRouter, TopicPartitions


@dataclass(frozen=True, slots=True)
class TopicUse:
    destination: str
    topic: str
    # The partition count the configuration routes by; None: any count works (partition 0 only).
    partitions: int | None
    why: str


def topic_uses(destination: DestinationConfig) -> tuple[list[TopicUse], list[str]]:
    """The topics a destination writes to, and the rules whose topics cannot be known ahead
    (bare regex patterns of dynamic_topic, named after the tables they match)."""
    mq, name = destination.mq, destination.name
    counts = TopicPartitions(mq.partitions, mq.dynamic_topic_partitions)
    router = CanalTopicRouter(mq.topic, mq.dynamic_topic)
    static = router.default_topic
    uses = [TopicUse(name, static, counts.count_for(static), "mq.topic")]
    known, unknown = router.rule_topics()
    uses += [TopicUse(name, t, counts.count_for(t), "mq.dynamic_topic") for t in known]
    if mq.ddl.mode == "topic":
        uses.append(TopicUse(name, mq.ddl.topic, None, "mq.ddl"))
    if mq.oversize.mode == "dead_letter":
        uses.append(TopicUse(name, mq.oversize.topic, None, "mq.oversize"))
    return _unique(uses), unknown


def _unique(uses: Iterable[TopicUse]) -> list[TopicUse]:
    seen: dict[str, TopicUse] = {}
    for use in uses:
        seen.setdefault(use.topic, use)
    return list(seen.values())
