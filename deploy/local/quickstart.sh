#!/usr/bin/env bash
# Installs everything, starts the local services, loads a small demo workload into MariaDB and
# runs `canal-bridge run` on config/destinations.yaml, printing the Kafka messages as they arrive.
# Stop with Ctrl-C; the services keep running (deploy/local/services.sh down stops them).
source "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"

deploy/local/install.sh
deploy/local/services.sh up
eval "$(deploy/local/services.sh env)"
exec "$VENV_DIR/bin/python" -m bridge.demo --config config/destinations.yaml
