#!/usr/bin/env bash
# The local services canal-bridge's tests, examples and benchmarks run against:
#   MariaDB (binlog ROW/FULL, GTIDs), MySQL 9.x (the same, run from a Debian sid chroot),
#   Kafka (KRaft, single node), ZooKeeper (standalone).
# Spark needs no server: pyspark runs local[*] from the virtualenv (see `env`).
#
# MariaDB and Kafka also speak TLS with certificates of a local CA made here (services/tls):
# MariaDB has an account created REQUIRE SSL, Kafka a second listener, SASL_SSL with
# SCRAM-SHA-512 (see docs/operations.md, "TLS and SASL").
#
# Usage: deploy/local/services.sh up|down|status|env [mariadb|mysql|kafka|zookeeper]...
# All listen on 127.0.0.1 only, on non-default ports; state lives under var/services.
# `up` is idempotent; `down` stops, by PID file, only what `up` started.
source "$(dirname "$0")/lib.sh"

ALL_SERVICES=(mariadb mysql zookeeper kafka)
KAFKA_LIBS=$CACHE_DIR/kafka-libs

pidfile() { echo "$SERVICES_DIR/$1/$1.pid"; }

require_free_port() { # SERVICE PORT VARIABLE
  if port_busy "$2"; then
    die "$1 cannot start: port 127.0.0.1:$2 is already in use by another process; free it or set $3 to another port"
  fi
}

# ---------------------------------------------------------------- TLS certificates
# A local CA and one server certificate for 127.0.0.1 and localhost, presented by MariaDB and
# by Kafka's SASL_SSL listener; clients verify it against $TLS_DIR/ca.crt. Made once, in a
# scratch folder moved into place whole, so an interrupted run never leaves half a set.
# server.pem (certificate, then its PKCS#8 key) is Kafka's PEM keystore.
tls_certificates() {
  [ -f "$TLS_DIR/server.pem" ] && return 0
  command -v openssl >/dev/null || apt_install openssl
  local work
  work=$(mktemp -d "$SERVICES_DIR/tls.XXXXXX")
  cat >"$work/openssl.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = canal-bridge local services CA
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
CNF
  (
    cd "$work"
    umask 077
    openssl req -x509 -newkey rsa:2048 -noenc -keyout ca.key -out ca.crt -days 3650 \
      -config openssl.cnf -extensions ca
    openssl req -newkey rsa:2048 -noenc -keyout server.key -out server.csr -config openssl.cnf \
      -subj /CN=localhost
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
      -days 3650 -out server.crt -extfile openssl.cnf -extensions server
    cat server.crt server.key >server.pem
    rm server.csr
  ) >"$work/openssl.log" 2>&1 || die "making the TLS certificates failed: see $work/openssl.log"
  chmod 755 "$work"  # the certificates readable by anyone, the keys (umask 077) by us only
  chmod 644 "$work/ca.crt" "$work/server.crt"
  rm -rf "$TLS_DIR"
  mv "$work" "$TLS_DIR"
  log "TLS certificates for 127.0.0.1/localhost made in $TLS_DIR (CA: ca.crt)"
}

# ---------------------------------------------------------------- MariaDB
mariadb_dir=$SERVICES_DIR/mariadb
mariadb_socket() { echo "$mariadb_dir/mysqld.sock"; }

mariadb_client() { mariadb --no-defaults --socket="$(mariadb_socket)" -uroot "$@"; }

mariadb_config() {
  cat >"$mariadb_dir/my.cnf" <<CNF
[mariadbd]
datadir=$mariadb_dir/data
socket=$(mariadb_socket)
pid-file=$(pidfile mariadb)
log-error=$mariadb_dir/mariadbd.log
port=$MYSQL_PORT
bind-address=127.0.0.1
skip-name-resolve
user=$(id -un)
server_id=1
log_bin=$mariadb_dir/binlog/mariadb-bin
binlog_format=ROW
binlog_row_image=FULL
binlog_row_metadata=FULL
gtid_strict_mode=ON
log_slave_updates=ON
expire_logs_days=7
# one file holds a whole benchmark load (the realistic (a): ~700 MB), as its floors need
max_binlog_size=1G
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
max_allowed_packet=64M
innodb_buffer_pool_size=256M
innodb_log_file_size=256M
innodb_flush_log_at_trx_commit=2
sync_binlog=0
ssl-ca=$TLS_DIR/ca.crt
ssl-cert=$TLS_DIR/server.crt
ssl-key=$TLS_DIR/server.key
CNF
}

mariadb_ready() { mariadb-admin --no-defaults --socket="$(mariadb_socket)" -uroot ping >/dev/null 2>&1; }

mariadb_up() {
  pid_alive "$(pidfile mariadb)" && return 0
  require_free_port MariaDB "$MYSQL_PORT" CANAL_BRIDGE_MYSQL_PORT
  local sock
  sock=$(mariadb_socket)
  [ ${#sock} -lt 100 ] || die "MariaDB socket path $sock is too long for a unix socket: set CANAL_BRIDGE_VAR_DIR to a shorter folder"
  mkdir -p "$mariadb_dir/binlog"
  tls_certificates
  mariadb_config
  local fresh=0
  if [ ! -d "$mariadb_dir/data/mysql" ]; then
    log "initialising the MariaDB datadir"
    mariadb-install-db --no-defaults --datadir="$mariadb_dir/data" --user="$(id -un)" \
      --auth-root-authentication-method=normal --skip-test-db >"$mariadb_dir/install.log" 2>&1 \
      || die "mariadb-install-db failed: see $mariadb_dir/install.log"
    fresh=1
  fi
  local mariadbd_bin
  mariadbd_bin=$(command -v mariadbd || echo /usr/sbin/mariadbd)
  setsid "$mariadbd_bin" --defaults-file="$mariadb_dir/my.cnf" </dev/null >/dev/null 2>&1 &
  wait_until 60 "MariaDB ready on 127.0.0.1:$MYSQL_PORT" mariadb_ready \
    || die "MariaDB did not become ready within 60s: see $mariadb_dir/mariadbd.log"
  if [ "$fresh" -eq 1 ]; then
    mariadb_client <<SQL || die "creating the MariaDB users failed"
CREATE USER '$MYSQL_CANAL_USER'@'%' IDENTIFIED BY '$MYSQL_CANAL_PASSWORD';
GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '$MYSQL_CANAL_USER'@'%';
CREATE USER '$MYSQL_ADMIN_USER'@'%' IDENTIFIED BY '$MYSQL_ADMIN_PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$MYSQL_ADMIN_USER'@'%' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
  fi
  # Every start, so that a datadir made before the TLS account gains it too.
  mariadb_client <<SQL || die "creating the MariaDB TLS account failed"
CREATE USER IF NOT EXISTS '$MYSQL_TLS_USER'@'%' IDENTIFIED BY '$MYSQL_TLS_PASSWORD' REQUIRE SSL;
ALTER USER '$MYSQL_TLS_USER'@'%' REQUIRE SSL;
GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '$MYSQL_TLS_USER'@'%';
SQL
}

# ---------------------------------------------------------------- MySQL (Debian sid chroot)
# mysqld runs chrooted in $SID_ROOTFS, in a mount namespace of its own where the service folder
# is bind-mounted at /srv/mysql (and /proc mounted): the mounts vanish with the process, and the
# datadir, binlogs, socket and PID file stay under var/services/mysql on the host.
mysql_dir=$SERVICES_DIR/mysql
MYSQL_IN_ROOT=/srv/mysql

# in_sid COMMAND...: a command of the sid root file system, seeing the service folder.
IN_SID=(unshare --mount --propagation private -- sh -c
  'mount --bind "$1" "$2/srv/mysql" && mount -t proc proc "$2/proc" && root=$2 && shift 2 && exec chroot "$root" "$@"'
  in_sid "$mysql_dir" "$SID_ROOTFS")
in_sid() { "${IN_SID[@]}" "$@"; }

oracle_mysql_client() { in_sid mysql --no-defaults --socket="$MYSQL_IN_ROOT/mysqld.sock" -uroot "$@"; }

mysql_config() {
  cat >"$mysql_dir/my.cnf" <<CNF
[mysqld]
datadir=$MYSQL_IN_ROOT/data
socket=$MYSQL_IN_ROOT/mysqld.sock
pid-file=$MYSQL_IN_ROOT/mysql.pid
log-error=$MYSQL_IN_ROOT/mysqld.log
port=$ORACLE_MYSQL_PORT
bind-address=127.0.0.1
mysqlx=OFF
skip-name-resolve
user=root
server_id=1
log_bin=$MYSQL_IN_ROOT/binlog/mysql-bin
binlog_format=ROW
binlog_row_image=FULL
binlog_row_metadata=FULL
gtid_mode=ON
enforce_gtid_consistency=ON
binlog_expire_logs_seconds=604800
# one file holds a whole benchmark load (the realistic (a): ~700 MB), as its floors need
max_binlog_size=1G
character-set-server=utf8mb4
max_allowed_packet=64M
innodb_buffer_pool_size=256M
innodb_redo_log_capacity=512M
innodb_flush_log_at_trx_commit=2
sync_binlog=0
secure_file_priv=$MYSQL_IN_ROOT/files
CNF
}

mysql_ready() { oracle_mysql_client -e 'SELECT 1' >/dev/null 2>&1; }
mysql_launcher=0
# Ready, or the launcher gone (mysqld refused its settings: wait no longer; the caller checks).
mysql_ready_or_exited() { mysql_ready || ! kill -0 "$mysql_launcher" 2>/dev/null; }

mysql_up() {
  pid_alive "$(pidfile mysql)" && return 0
  require_free_port MySQL "$ORACLE_MYSQL_PORT" CANAL_BRIDGE_ORACLE_MYSQL_PORT
  [ -x "$SID_ROOTFS/usr/sbin/mysqld" ] || die "MySQL missing in $SID_ROOTFS: run deploy/local/install.sh mysql"
  local sock=$mysql_dir/mysqld.sock
  [ ${#sock} -lt 100 ] || die "MySQL socket path $sock is too long for a unix socket: set CANAL_BRIDGE_VAR_DIR to a shorter folder"
  mkdir -p "$mysql_dir/binlog" "$mysql_dir/files"
  mysql_config
  if [ ! -d "$mysql_dir/data/mysql" ]; then
    log "initialising the MySQL datadir"
    rm -rf "$mysql_dir/data"
    in_sid /usr/sbin/mysqld --defaults-file="$MYSQL_IN_ROOT/my.cnf" --initialize-insecure \
      >"$mysql_dir/install.log" 2>&1 || die "mysqld --initialize failed: see $mysql_dir/install.log and $mysql_dir/mysqld.log"
  fi
  setsid "${IN_SID[@]}" /usr/sbin/mysqld --defaults-file="$MYSQL_IN_ROOT/my.cnf" </dev/null >/dev/null 2>&1 &
  mysql_launcher=$!
  wait_until 90 "MySQL ready on 127.0.0.1:$ORACLE_MYSQL_PORT" mysql_ready_or_exited \
    && mysql_ready || die "MySQL did not become ready within 90s: see $mysql_dir/mysqld.log"
  if [ ! -f "$mysql_dir/.accounts" ]; then
    # The accounts use MySQL's default plugin, caching_sha2_password.
    oracle_mysql_client <<SQL || die "creating the MySQL users failed"
CREATE USER IF NOT EXISTS '$MYSQL_CANAL_USER'@'%' IDENTIFIED BY '$MYSQL_CANAL_PASSWORD';
GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '$MYSQL_CANAL_USER'@'%';
CREATE USER IF NOT EXISTS '$MYSQL_ADMIN_USER'@'%' IDENTIFIED BY '$MYSQL_ADMIN_PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$MYSQL_ADMIN_USER'@'%' WITH GRANT OPTION;
SQL
    touch "$mysql_dir/.accounts"
  fi
}

# ---------------------------------------------------------------- ZooKeeper
zookeeper_dir=$SERVICES_DIR/zookeeper

zookeeper_ready() {
  local reply
  reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$ZOOKEEPER_PORT" && printf ruok >&3 && timeout 2 cat <&3) 2>/dev/null) || return 1
  [ "$reply" = imok ]
}

zookeeper_up() {
  pid_alive "$(pidfile zookeeper)" && return 0
  require_free_port ZooKeeper "$ZOOKEEPER_PORT" CANAL_BRIDGE_ZOOKEEPER_PORT
  [ -d "$KAFKA_LIBS" ] || die "ZooKeeper jars missing in $KAFKA_LIBS: run deploy/local/install.sh kafka"
  mkdir -p "$zookeeper_dir/data"
  cat >"$zookeeper_dir/zoo.cfg" <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$zookeeper_dir/data
clientPort=$ZOOKEEPER_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
maxSessionTimeout=60000
CFG
  local log4j=$zookeeper_dir/log4j.properties
  printf '%s\n' 'log4j.rootLogger=INFO, F' 'log4j.appender.F=org.apache.log4j.FileAppender' \
    "log4j.appender.F.File=$zookeeper_dir/zookeeper.log" 'log4j.appender.F.layout=org.apache.log4j.PatternLayout' \
    'log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n' >"$log4j"
  setsid java -Xmx256m -Dlog4j.configuration="file:$log4j" -Dzookeeper.admin.enableServer=false \
    -cp "$KAFKA_LIBS/*" org.apache.zookeeper.server.quorum.QuorumPeerMain "$zookeeper_dir/zoo.cfg" \
    </dev/null >"$zookeeper_dir/stdout.log" 2>&1 &
  echo $! >"$(pidfile zookeeper)"
  wait_until 60 "ZooKeeper ready on 127.0.0.1:$ZOOKEEPER_PORT" zookeeper_ready \
    || die "ZooKeeper did not become ready within 60s: see $zookeeper_dir/zookeeper.log"
}

# ---------------------------------------------------------------- Kafka (KRaft)
kafka_dir=$SERVICES_DIR/kafka

kafka_ready() {
  pid_alive "$(pidfile kafka)" || return 1
  grep -q 'Kafka Server started' "$kafka_dir/server.log" 2>/dev/null && port_busy "$KAFKA_PORT" \
    && port_busy "$KAFKA_SASL_PORT"
}

# The SCRAM user of the SASL_SSL listener, set through the PLAINTEXT listener once the broker
# runs: KRaft keeps SCRAM credentials in the cluster metadata, which `StorageTool format
# --add-scram` seeds only when the log dir is made, so this one path serves fresh and existing
# log dirs alike (setting the same password again changes nothing a client sees).
kafka_scram_user() {
  java -Xmx128m -cp "$KAFKA_LIBS/*" kafka.admin.ConfigCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" \
    --alter --entity-type users --entity-name "$KAFKA_SASL_USER" \
    --add-config "SCRAM-SHA-512=[iterations=8192,password=$KAFKA_SASL_PASSWORD]" \
    >"$kafka_dir/scram.log" 2>&1 || die "creating the Kafka SCRAM user failed: see $kafka_dir/scram.log"
  log "Kafka SASL_SSL (SCRAM-SHA-512, user $KAFKA_SASL_USER) on 127.0.0.1:$KAFKA_SASL_PORT"
}

kafka_up() {
  pid_alive "$(pidfile kafka)" && return 0
  require_free_port Kafka "$KAFKA_PORT" CANAL_BRIDGE_KAFKA_PORT
  require_free_port "Kafka controller" "$KAFKA_CONTROLLER_PORT" CANAL_BRIDGE_KAFKA_CONTROLLER_PORT
  require_free_port "Kafka SASL_SSL" "$KAFKA_SASL_PORT" CANAL_BRIDGE_KAFKA_SASL_PORT
  [ -d "$KAFKA_LIBS" ] || die "Kafka jars missing in $KAFKA_LIBS: run deploy/local/install.sh kafka"
  mkdir -p "$kafka_dir/data"
  tls_certificates
  cat >"$kafka_dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$TLS_DIR/server.pem
ssl.client.auth=none
log.dirs=$kafka_dir/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
message.max.bytes=1048588
PROPS
  local log4j=$kafka_dir/log4j.properties
  printf '%s\n' 'log4j.rootLogger=INFO, F' 'log4j.appender.F=org.apache.log4j.FileAppender' \
    "log4j.appender.F.File=$kafka_dir/server.log" 'log4j.appender.F.layout=org.apache.log4j.PatternLayout' \
    'log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n' \
    'log4j.logger.kafka=INFO' 'log4j.logger.org.apache.kafka=INFO' >"$log4j"
  local java_opts=(-Xmx768m -Xms256m "-Dlog4j.configuration=file:$log4j" -cp "$KAFKA_LIBS/*")
  if [ ! -f "$kafka_dir/data/meta.properties" ]; then
    local cluster_id
    cluster_id=$(java "${java_opts[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null) \
      || die "Kafka's StorageTool failed to run: check Java and $KAFKA_LIBS"
    java "${java_opts[@]}" kafka.tools.StorageTool format -t "$cluster_id" \
      -c "$kafka_dir/server.properties" >"$kafka_dir/format.log" 2>&1 \
      || die "formatting the Kafka log dir failed: see $kafka_dir/format.log"
  fi
  : >"$kafka_dir/server.log"
  setsid java "${java_opts[@]}" kafka.Kafka "$kafka_dir/server.properties" \
    </dev/null >"$kafka_dir/stdout.log" 2>&1 &
  echo $! >"$(pidfile kafka)"
  wait_until 90 "Kafka ready on 127.0.0.1:$KAFKA_PORT" kafka_ready \
    || die "Kafka did not become ready within 90s: see $kafka_dir/server.log and $kafka_dir/stdout.log"
  kafka_scram_user
}

# ---------------------------------------------------------------- common
stop_service() { # SERVICE
  local file pid
  file=$(pidfile "$1")
  if ! pid_alive "$file"; then rm -f "$file"; return 0; fi
  pid=$(cat "$file")
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_until 60 "$1 stopped" bash -c "! kill -0 $pid 2>/dev/null"; then
    log "$1 (pid $pid) ignored SIGTERM for 60s: killing it"
    kill -KILL "$pid" 2>/dev/null || true
    wait_until 10 "$1 killed" bash -c "! kill -0 $pid 2>/dev/null" || die "could not stop $1 (pid $pid)"
  fi
  rm -f "$file"
}

status_line() {
  if pid_alive "$(pidfile "$1")"; then
    printf '%-10s running  pid %s\n' "$1" "$(cat "$(pidfile "$1")")"
  else
    printf '%-10s stopped\n' "$1"
  fi
}

print_env() {
  cat <<ENV
export CANAL_BRIDGE_MYSQL_HOST=127.0.0.1
export CANAL_BRIDGE_MYSQL_PORT=$MYSQL_PORT
export CANAL_BRIDGE_MYSQL_USER=$MYSQL_CANAL_USER
export CANAL_BRIDGE_MYSQL_PASSWORD=$MYSQL_CANAL_PASSWORD
export CANAL_BRIDGE_MYSQL_ADMIN_USER=$MYSQL_ADMIN_USER
export CANAL_BRIDGE_MYSQL_ADMIN_PASSWORD=$MYSQL_ADMIN_PASSWORD
export CANAL_BRIDGE_ORACLE_MYSQL_PORT=$ORACLE_MYSQL_PORT
export CANAL_PASSWORD=$MYSQL_CANAL_PASSWORD
export KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:$KAFKA_PORT
export ZOOKEEPER_HOSTS=127.0.0.1:$ZOOKEEPER_PORT
export CANAL_BRIDGE_SERVICES=$REPO_ROOT/deploy/local/services.sh
export CANAL_BRIDGE_VAR_DIR=$VAR_DIR
export SPARK_IVY_DIR=$CACHE_DIR/ivy
export PYSPARK_PYTHON=$VENV_DIR/bin/python
export PYSPARK_DRIVER_PYTHON=$VENV_DIR/bin/python
ENV
  # Once `up` has made the certificates (an older services folder has none until its next up).
  [ -f "$TLS_DIR/ca.crt" ] || return 0
  cat <<ENV
export CANAL_BRIDGE_TLS_CA=$TLS_DIR/ca.crt
export CANAL_BRIDGE_MYSQL_TLS_USER=$MYSQL_TLS_USER
export CANAL_BRIDGE_MYSQL_TLS_PASSWORD=$MYSQL_TLS_PASSWORD
export KAFKA_SASL_BOOTSTRAP_SERVERS=127.0.0.1:$KAFKA_SASL_PORT
export CANAL_BRIDGE_KAFKA_SASL_USER=$KAFKA_SASL_USER
export CANAL_BRIDGE_KAFKA_SASL_PASSWORD=$KAFKA_SASL_PASSWORD
ENV
}

main() {
  local cmd=${1:-}
  shift || true
  local services=("$@")
  [ ${#services[@]} -gt 0 ] || services=("${ALL_SERVICES[@]}")
  for s in "${services[@]}"; do
    case $s in mariadb | mysql | kafka | zookeeper) ;; *) die "unknown service '$s': use mariadb, mysql, kafka or zookeeper" ;; esac
  done
  case $cmd in
    up)
      mkdir -p "$SERVICES_DIR"
      local parts=(system kafka)
      [[ " ${services[*]} " != *" mysql "* ]] || parts+=(mysql)
      "$REPO_ROOT/deploy/local/install.sh" "${parts[@]}"
      for s in "${services[@]}"; do "${s}_up"; done
      ;;
    down)
      local i
      for ((i = ${#services[@]} - 1; i >= 0; i--)); do stop_service "${services[$i]}"; done
      ;;
    status) for s in "${services[@]}"; do status_line "$s"; done ;;
    env) print_env ;;
    *) die "usage: $0 up|down|status|env [mariadb|mysql|kafka|zookeeper]..." ;;
  esac
}

main "$@"
