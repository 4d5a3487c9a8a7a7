"""PySpark Structured Streaming jobs that read canal-bridge's Kafka topics."""
