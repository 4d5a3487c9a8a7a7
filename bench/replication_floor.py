"""Plain mysql-replication decoding a binlog range: the floor the bridge's parser is compared to.

    python -m bench.replication_floor FILE START END SCHEMA [mariadb|mysql]

Prints ``{"rows": n}``: the row changes of ``SCHEMA`` between START and END, each row decoded
(``event.rows``) the library's own way.
"""

from __future__ import annotations

import json
import os
import sys
from typing import cast

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    PartialUpdateRowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from bench.source import Flavor, source_server


def main(file: str, start: int, end: int, schema: str, flavor: Flavor = "mariadb") -> int:
    server = source_server(flavor)
    stream = BinLogStreamReader(
        connection_settings={
            "host": server.host,
            "port": server.port,
            "user": server.user,
            "passwd": server.password,
        },
        server_id=40000 + os.getpid() % 10000,
        log_file=file,
        log_pos=start,
        resume_stream=True,
        blocking=False,
        # MySQL's PARTIAL_JSON updates are events of their own type (39).
        only_events=[WriteRowsEvent, UpdateRowsEvent, PartialUpdateRowsEvent, DeleteRowsEvent],
        freeze_schema=True,
        enable_logging=False,
    )
    rows = 0
    try:
        for event in stream:
            if event.schema == schema:
                rows += len(event.rows)
            if stream.log_file != file or event.packet.log_pos >= end:
                break
    finally:
        stream.close()
    print(json.dumps({"rows": rows}))
    return 0


if __name__ == "__main__":
    flavor = cast(Flavor, sys.argv[5] if len(sys.argv) > 5 else "mariadb")
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], flavor))
