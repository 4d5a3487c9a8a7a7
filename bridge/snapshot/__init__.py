"""Snapshots of existing rows, interleaved with the binlog stream (issue 18, docs/snapshots.md)."""
