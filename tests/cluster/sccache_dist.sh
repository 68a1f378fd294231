#!/usr/bin/env bash
# sccache_dist.sh start DIR [SERVERS] | servers DIR [SERVERS] | stop-servers DIR | stop DIR
#                 | recipe FILE SRC [SCHEDULER_URL]
# An sccache-dist cluster on this machine, for the tests and the benchmark: a scheduler on
# 127.0.0.1:$SCHED_PORT (default 10600) and SERVERS build servers (default 2) on 127.0.0.1 from
# port 10501 up. The scheduler checks that a server's heartbeat comes from the address in its
# token, so on one machine they all share 127.0.0.1 and differ by port. Build servers use the
# overlay builder (bubblewrap; needs root). Writes DIR/token (the client token).
# SCCACHE_DIST (default: sccache-dist on PATH) names the program. TOOLCHAIN_CACHE_SIZE (bytes) gives
# the servers a toolchain cache that small: a client's toolchain upload then fails (a fault test).
set -euo pipefail
cmd="$1" dir="$2" n="${3:-2}"
dist="${SCCACHE_DIST:-sccache-dist}"
sched_port="${SCHED_PORT:-10600}"
if [ "$cmd" = recipe ]; then  # the default ops of SRC ($3), one arch, through sccache (and the scheduler $4)
  {
    printf '[package]\nname = "opforge-ops"\nversion = "0.1.0"\nlocal_version = "none"\n'
    printf '[source]\npath = "%s"\nops_dir = "src/kernels"\n[arch]\nlist = "9.0"\n' "$3"
    printf '[build]\ncache = "sccache"\n'
    if [ -n "${4:-}" ]; then printf 'scheduler = "%s"\n' "$4"; fi
  } >"$dir.tmp" && mv "$dir.tmp" "$dir"
  exit 0
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
wait_port() {  # the port answers, within 20 s
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "sccache_dist.sh: nothing listens on 127.0.0.1:$1" >&2; return 1
}
servers() {
  local key i port
  key="$(cat "$dir/key")"
  for i in $(seq "$n"); do
    port=$((10500 + i))
    mkdir -p "$dir/server$port"
    # --secret-key=KEY, not two words: a base64url key may begin with "-" (CI drew "-n...").
    cat >"$dir/server$port.toml" <<TOML
cache_dir = "$dir/server$port/toolchains"
${TOOLCHAIN_CACHE_SIZE:+toolchain_cache_size = $TOOLCHAIN_CACHE_SIZE}
public_addr = "127.0.0.1:$port"
scheduler_url = "http://127.0.0.1:$sched_port"
[builder]
type = "overlay"
build_dir = "$dir/server$port/build"
bwrap_path = "$(command -v bwrap)"
[scheduler_auth]
type = "jwt_token"
token = "$("$dist" auth generate-jwt-hs256-server-token --server "127.0.0.1:$port" --secret-key="$key")"
TOML
    RUST_LOG=info "$dist" server --config "$dir/server$port.toml" >"$dir/server$port.log" 2>&1 </dev/null &
    wait_port "$port"
  done
}
stop_matching() {  # stop this cluster's processes whose config file name starts with $1
  # By command line: sccache-dist may run as a child of the process that was started.
  pkill -f -- "--config $dir/$1" 2>/dev/null || true
  for _ in $(seq 100); do pgrep -f -- "--config $dir/$1" >/dev/null || return 0; sleep 0.1; done
  pkill -9 -f -- "--config $dir/$1" 2>/dev/null || true
}
case "$cmd" in
  start)
    "$dist" auth generate-jwt-hs256-key >"$dir/key"
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/token"
    cat >"$dir/scheduler.toml" <<TOML
public_addr = "127.0.0.1:$sched_port"
[client_auth]
type = "token"
token = "$(cat "$dir/token")"
[server_auth]
type = "jwt_hs256"
secret_key = "$(cat "$dir/key")"
TOML
    RUST_LOG=info "$dist" scheduler --config "$dir/scheduler.toml" >"$dir/scheduler.log" 2>&1 </dev/null &
    wait_port "$sched_port"
    if [ "$n" -gt 0 ]; then servers; fi
    ;;
  servers) servers ;;
  stop-servers) stop_matching server ;;
  stop)
    stop_matching ''
    # Wait for the ports to be free: the next start must not find the old scheduler there.
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$sched_port") 2>/dev/null || exit 0; sleep 0.1; done
    echo "sccache_dist.sh: 127.0.0.1:$sched_port is still taken" >&2; exit 1 ;;
  *) echo "usage: sccache_dist.sh start|servers|stop-servers|stop DIR [SERVERS]" >&2; exit 2 ;;
esac
