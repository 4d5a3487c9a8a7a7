"""Snapshots of existing rows, interleaved with the binlog stream (docs/snapshots.md)."""
