#!/usr/bin/env bash
# The whole cluster on one machine, laid out as on five hosts (README.md "From one box to several"):
#
#   scripts/cluster.sh up       start PostgreSQL, three Simu nodes, Kamailio and HAProxy
#   scripts/cluster.sh status   what runs, the nodes' table and the front's dispatcher set
#   scripts/cluster.sh down     stop everything and remove the namespaces
#
# Each part has its own network namespace and address on one private bridge (run as root):
#
#   <name>-db     10.77.0.5    PostgreSQL
#   <name>-n1..3  10.77.0.11-13 Simu nodes (SIP 5060, HTTP 8080, each with its own rtpengine on its address)
#   <name>-front  10.77.0.2    Kamailio (SIP 5060 UDP/TCP, deploy/kamailio/) and HAProxy (HTTP 8080, deploy/haproxy/)
#
# The host reaches them through the bridge (10.77.0.1): point carriers and phones at 10.77.0.2:5060, the API and
# the portal at http://10.77.0.2:8080. SIMU_CLUSTER_NAME (default simu) names the namespaces and the bridge;
# SIMU_CLUSTER_NET (default 10.77.0) the /24; SIMU_CLUSTER_DIR (default /tmp/<name>-cluster) keeps data, logs
# and pids (down keeps the data; the next up starts on it). Only processes and namespaces this script started are
# stopped, by their pid and name; a failed up takes down what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

NAME=${SIMU_CLUSTER_NAME:-simu}
NET=${SIMU_CLUSTER_NET:-10.77.0}
DIR=${SIMU_CLUSTER_DIR:-/tmp/$NAME-cluster}
BRIDGE="${NAME:0:10}-br"
FRONT="$NET.2"
DB="$NET.5"
NODES=(1 2 3)
node_addr() { echo "$NET.$((10 + $1))"; }

die() {
  echo "cluster: $*" >&2
  exit 1
}

# ns NAME ADDRESS: a namespace joined to the bridge by a veth pair, its loopback up.
make_ns() {
  local ns=$1 addr=$2 short=$3
  ip netns add "$ns"
  ip link add "v-$short" type veth peer name eth0 netns "$ns"
  ip link set "v-$short" master "$BRIDGE" up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}

# start NAME NS CMD...: a process in a namespace, its output in DIR/NAME.log, its pid in DIR/NAME.pid.
start() {
  local name=$1 ns=$2
  shift 2
  ip netns exec "$ns" setsid "$@" >"$DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/$name.pid"
}

# stop NAME: SIGTERM the process group started as NAME (a node drains first), SIGKILL after `wait` seconds.
stop() {
  local name=$1 wait=${2:-10} pid i
  [ -f "$DIR/$name.pid" ] || return 0
  pid=$(cat "$DIR/$name.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < wait * 5; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/$name.pid"
}

pg_bin() { ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1; }

wait_for() {
  local what=$1 tries=$2
  shift 2
  for ((i = 0; i < tries; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  die "$what did not come up (logs in $DIR)"
}

node_env() {
  local n=$1 addr
  addr=$(node_addr "$n")
  echo SIMU_DATA_DIR="$DIR/n$n" SIMU_NODE_ID="node$n" SIMU_DATABASE_URL="postgres://simu@$DB:5432/simu" \
    SIMU_HTTP_HOST="$addr" SIMU_HTTP_PORT=8080 SIMU_SIP_HOST="$addr" SIMU_SIP_PORT=5060 SIMU_PUBLIC_HOST="$addr" \
    SIMU_PUBLIC_BASE_URL="http://$FRONT:8080" SIMU_SIP_TLS_PORT=0 SIMU_SIP_WS_PORT=0 SIMU_SIP_WSS_PORT=0 \
    SIMU_RTPENGINE_INTERFACE="$addr" SIMU_SIP_TRUSTED_FRONTS="$FRONT"
}

start_node() {
  local n=$1
  mkdir -p "$DIR/n$n"
  # shellcheck disable=SC2046
  start "n$n" "$NAME-n$n" env $(node_env "$n") node --enable-source-maps --import tsx "$ROOT/main.ts"
  wait_for "node $n" 120 curl -sf "http://$(node_addr "$n"):8080/api/health/"
}

up() {
  [ "$(id -u)" = 0 ] || die "run as root (it creates network namespaces)"
  [ -e "/run/netns/$NAME-front" ] && die "already up (scripts/cluster.sh down first)"
  command -v kamailio >/dev/null && command -v haproxy >/dev/null || die "install kamailio and haproxy (npm test's set-up does)"
  mkdir -p "$DIR"
  # A start that fails half-way stops what it started and removes the namespaces.
  trap 'echo "cluster: up failed, taking down what started" >&2; down' EXIT
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  make_ns "$NAME-db" "$DB" "${NAME:0:8}db"
  make_ns "$NAME-front" "$FRONT" "${NAME:0:8}fr"
  for n in "${NODES[@]}"; do make_ns "$NAME-n$n" "$(node_addr "$n")" "${NAME:0:8}n$n"; done

  # PostgreSQL, trusting the cluster's network (a lab: put passwords and TLS on real hosts).
  local pgbin
  pgbin=$(pg_bin)
  local fresh=0
  if [ ! -f "$DIR/pg/PG_VERSION" ]; then # a cluster brought down keeps its data for the next up
    fresh=1
    mkdir -p "$DIR/pg"
    chown postgres: "$DIR/pg"
    runuser -u postgres -- "$pgbin/initdb" -D "$DIR/pg" -U simu --auth=trust -E UTF8 >"$DIR/initdb.log"
    echo "host all all $NET.0/24 trust" >>"$DIR/pg/pg_hba.conf"
  fi
  start db "$NAME-db" runuser -u postgres -- "$pgbin/postgres" -D "$DIR/pg" -c "listen_addresses=$DB" \
    -c "unix_socket_directories=$DIR/pg" -c max_connections=200
  wait_for PostgreSQL 40 "$pgbin/pg_isready" -h "$DB" -p 5432
  [ "$fresh" = 0 ] || ip netns exec "$NAME-db" runuser -u postgres -- "$pgbin/createdb" -h "$DB" -U simu simu

  # Nodes one after another: the first runs the migrations.
  for n in "${NODES[@]}"; do start_node "$n"; done

  : >"$DIR/nodes.list"
  for n in "${NODES[@]}"; do echo "1 sip:$(node_addr "$n"):5060 0 0" >>"$DIR/nodes.list"; done
  start kamailio "$NAME-front" kamailio -f "$ROOT/deploy/kamailio/kamailio.cfg" -DD -E -Y "$DIR" \
    -A "LISTEN_UDP=udp:$FRONT:5060" -A "LISTEN_TCP=tcp:$FRONT:5060" -A "DS_LIST=\"$DIR/nodes.list\"" \
    -A "CTL_SOCKET=\"unix:$DIR/kamailio.ctl\""
  start haproxy "$NAME-front" env SIMU_HTTP_BIND="$FRONT:8080" SIMU_NODE_A="$(node_addr 1):8080" \
    SIMU_NODE_B="$(node_addr 2):8080" SIMU_NODE_C="$(node_addr 3):8080" haproxy -db -f "$ROOT/deploy/haproxy/haproxy.cfg"
  wait_for HAProxy 40 curl -sf "http://$FRONT:8080/api/health/"
  trap - EXIT
  echo "cluster up: SIP $FRONT:5060 (UDP, TCP), HTTP http://$FRONT:8080; data and logs in $DIR"
}

down() {
  stop haproxy 5
  stop kamailio 5
  for n in "${NODES[@]}"; do stop "n$n" 30; done
  stop db 10
  for ns in "$NAME-front" "$NAME-db" "${NODES[@]/#/$NAME-n}"; do
    if [ -e "/run/netns/$ns" ]; then ip netns delete "$ns"; fi
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE"; fi
  echo "cluster down (data kept in $DIR)"
}

status() {
  for p in db n1 n2 n3 kamailio haproxy; do
    if [ -f "$DIR/$p.pid" ] && kill -0 "$(cat "$DIR/$p.pid")" 2>/dev/null; then
      echo "$p: running (pid $(cat "$DIR/$p.pid"))"
    else
      echo "$p: stopped"
    fi
  done
  [ -e "/run/netns/$NAME-front" ] || return 0
  SIMU_DATABASE_URL="postgres://simu@$DB:5432/simu" bin/simu nodes 2>/dev/null || true
  kamcmd -s "unix:$DIR/kamailio.ctl" dispatcher.list 2>/dev/null | grep -E 'URI|FLAGS' || true
}

# restart N: the rolling upgrade of one node (README.md): drain and wait, start the new build, back in the set.
restart() {
  local n=${1:?node number}
  SIMU_DATA_DIR="$DIR/n$n" bin/simu node drain --wait --timeout "${SIMU_DRAIN_SECONDS:-300}"
  start_node "$n"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  restart) restart "${2:-}" ;;
  *) die "usage: scripts/cluster.sh up|down|status|restart N" ;;
esac
