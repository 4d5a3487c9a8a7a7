#!/usr/bin/env bash
# Installs what running needs (MariaDB, Kafka, the virtualenv with the compiled path: not the
# test toolchain), starts MariaDB and Kafka, loads a small demo workload into MariaDB and runs
# `canal-bridge run` on config/destinations.yaml, printing the Kafka messages as they arrive.
# Stop with Ctrl-C; the services keep running (deploy/local/services.sh down stops them).
source "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"

deploy/local/install.sh run
deploy/local/services.sh up mariadb kafka
eval "$(deploy/local/services.sh env)"
exec "$VENV_DIR/bin/python" -m bridge.demo --config config/destinations.yaml
