"""Run the chaos suite and print its table:

    var/venv/bin/python -m tests.chaos            # the short suite (what the tests run)
    var/venv/bin/python -m tests.chaos --long     # 50 kills, 500k changes, long outages
    var/venv/bin/python -m tests.chaos --only kill9-3p broker-down

Needs the local services (``eval "$(deploy/local/services.sh env)"``), the Kafka jars and
MariaDB binaries of ``deploy/local/install.sh``, and root for the disk-full scenario's tmpfs.
Exits 1 when a scenario failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from pathlib import Path

from tests.chaos.scenarios import SCENARIOS, Services
from tests.chaos.stage import LONG, SHORT, Outcome
from tests.chaos.table import render
from tests.conftest import server_of


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--long", action="store_true", help="the long suite")
    parser.add_argument("--only", nargs="+", choices=list(SCENARIOS), help="these scenarios")
    args = parser.parse_args(argv)
    size = LONG if args.long else SHORT
    outcomes: list[Outcome] = []
    failed: list[str] = []
    with server_of("mariadb") as mysql, tempfile.TemporaryDirectory(prefix="chaos-") as work:
        services = Services(mysql, _kafka(), Path(work))
        for name in args.only or SCENARIOS:
            print(f"--- {name}", flush=True)
            try:
                outcome = SCENARIOS[name](services, size)
            except Exception:  # one broken scenario must not cost the others' figures
                traceback.print_exc()
                failed.append(name)
                continue
            print(outcome.report.summary(), *outcome.problems, sep="\n")
            print(render([outcome]).splitlines()[-1], flush=True)  # the row, at once
            outcomes.append(outcome)
    print(render(outcomes))
    if failed:
        print(f"raised (see above): {', '.join(failed)}")
    return 0 if all(o.passed for o in outcomes) and not failed else 1


def _kafka() -> str:
    import os

    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not bootstrap:
        sys.exit('KAFKA_BOOTSTRAP_SERVERS is not set: eval "$(deploy/local/services.sh env)"')
    return bootstrap


if __name__ == "__main__":
    sys.exit(main())
