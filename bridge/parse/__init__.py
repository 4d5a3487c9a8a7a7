"""The binlog reader (canal's event parser): the dump connection and its framing, event and
row decoding, and the conversion to canal entries; in a thread or a process of its own."""
