"""bench/compare: canal-bridge side by side with Debezium Server and canal 1.1.7.

``python -m bench.compare`` (cli.py); the systems' settings (settings.py), Debezium's seeded
offset file (debezium_offsets.py), the Java artifacts (artifacts.py), the processes
(systems.py), following a topic (tally.py) and the result table (results.py).
"""
