#!/usr/bin/env bash
# slurm.sh start DIR | stop DIR | env DIR
# A one-node SLURM cluster on this machine, for the tests (Debian's slurm-wlm and munge, from
# scripts/deps), everything in DIR: a munge key and a munged of its own (DIR/munge.socket), a
# slurm.conf (DIR/slurm.conf), slurmctld and slurmd (as root), their state, spool, logs and pid
# files. Clients find it through SLURM_CONF=DIR/slurm.conf: `eval "$(slurm.sh env DIR)"`.
#   SLURM_PORT   slurmctld's port (default 10817); slurmd takes the next one. Away from SLURM's
#                own 6817/6818 and from the sccache-dist tests' 10500-10700.
#   SLURM_CPUS   the CPUs the node claims (default: this machine's). More than it has is allowed
#                (SlurmdParameters=config_overrides): a job script asking for 16 CPUs then runs
#                as written on a small machine.
# `start` returns when sinfo shows the node idle. `stop` cancels the jobs, stops the daemons (by
# their pid files, then by DIR in their command line or environment) and waits until none is left.
set -euo pipefail
cmd="${1:-}" dir="${2:-}"
[ -n "$dir" ] || { echo "usage: slurm.sh start|stop|env DIR" >&2; exit 2; }
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
export SLURM_CONF="$dir/slurm.conf"
say() { echo "slurm.sh: $*" >&2; }

# The processes of this cluster: the pid files' daemons, whatever names DIR in its command line
# (munged --socket DIR/..., slurmctld/slurmd -f DIR/slurm.conf), carries OPFORGE_SLURM_DIR=DIR in
# its environment or holds DIR/slurmd.log open (slurmd's slurmstepd, which is "slurmstepd: [1.0]"
# and a child of init; gVisor shows no other process's environment), and their descendants (the
# jobs' processes).
ours() {
  local roots=() p f
  for f in "$dir"/*.pid; do f=$(cat "$f" 2>/dev/null) && roots+=("$f"); done
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] && continue
    { tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF -- "$dir/" ||
      tr '\0' '\n' <"/proc/$p/environ" | grep -qxF "OPFORGE_SLURM_DIR=$dir" ||
      ls -l "/proc/$p/fd" | grep -qF -- "-> $dir/slurmd.log"; } 2>/dev/null && roots+=("$p")
  done
  [ ${#roots[@]} -gt 0 ] || return 0
  # Descendants, from the parent links of every process.
  ps -e -o pid=,ppid= | awk -v roots="${roots[*]}" -v self=$$ '
    BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
    { parent[$1] = $2 }
    END {
      do { grew = 0
        for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
      } while (grew)
      for (p in keep) if (p != self && (p in parent)) print p
    }'
}

stop() {
  if [ -f "$dir/slurm.conf" ] && [ -f "$dir/slurmctld.pid" ]; then
    # The jobs first, while slurmd can still end their steps.
    local jobs
    jobs=$(timeout 10 squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ' || true)
    if [ -n "${jobs// /}" ]; then
      # shellcheck disable=SC2086
      timeout 10 scancel $jobs 2>/dev/null || true
      for _ in $(seq 50); do [ -z "$(timeout 5 squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
    fi
  fi
  local pids sig
  for sig in TERM TERM TERM KILL; do
    pids=$(ours)
    [ -z "$pids" ] && break
    # shellcheck disable=SC2086
    kill -$sig $pids 2>/dev/null || true
    for _ in $(seq 30); do [ -z "$(ours)" ] && break; sleep 0.1; done
  done
  rm -f "$dir"/*.pid
  pids=$(ours)
  [ -z "$pids" ] || { say "left running: $(ps -o pid=,args= -p "${pids//$'\n'/,}" || true)"; return 1; }
}

wait_port_free() {
  local port
  for port in "$@"; do
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || continue 2; sleep 0.1; done
    say "127.0.0.1:$port is taken"; return 1
  done
}

start() {
  local port=${SLURM_PORT:-10817} host cpus mem
  command -v slurmctld >/dev/null && command -v munged >/dev/null ||
    { say "slurmctld or munged is not installed (scripts/deps installs slurm-wlm and munge)"; return 77; }
  [ "$(id -u)" -eq 0 ] || { say "the daemons run as root here"; return 77; }
  stop >/dev/null 2>&1 || true
  wait_port_free "$port" $((port + 1))
  rm -rf "$dir/state" "$dir/spool"
  mkdir -p "$dir/state" "$dir/spool"
  chmod 755 "$dir"

  # munge: a key of its own and a daemon on a socket of its own. munged refuses a key or folder
  # that others could write, and prefers not to run as root: --force.
  [ -f "$dir/munge.key" ] || { head -c 1024 /dev/urandom >"$dir/munge.key.tmp" && mv "$dir/munge.key.tmp" "$dir/munge.key"; }
  chmod 400 "$dir/munge.key"
  munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" ||
    { say "munged did not start:"; tail -5 "$dir/munged.log" >&2; return 1; }
  for _ in $(seq 50); do [ -S "$dir/munge.socket" ] && break; sleep 0.1; done
  munge --socket="$dir/munge.socket" -n | unmunge --socket="$dir/munge.socket" >/dev/null ||
    { say "munge does not answer on $dir/munge.socket"; return 1; }

  host=$(hostname -s)
  cpus=${SLURM_CPUS:-$(nproc)}
  mem=1024
  cat >"$dir/slurm.conf.tmp" <<CONF
# A one-node cluster for opforge's tests (tests/cluster/slurm.sh); everything under $dir.
ClusterName=opforge-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: processes are tracked through their parents.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# The node claims SLURM_CPUS, whatever this machine has.
SlurmdParameters=config_overrides
ReturnToService=2
# Finished jobs stay visible to scontrol show job (there is no accounting) for 10 minutes.
MinJobAge=600
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MessageTimeout=20
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  mv "$dir/slurm.conf.tmp" "$dir/slurm.conf"

  slurmctld -f "$dir/slurm.conf" -i ||
    { say "slurmctld did not start:"; tail -20 "$dir/slurmctld.log" >&2; return 1; }
  OPFORGE_SLURM_DIR="$dir" slurmd -f "$dir/slurm.conf" -N "$host" ||
    { say "slurmd did not start:"; tail -20 "$dir/slurmd.log" >&2; return 1; }
  local state=""
  for _ in $(seq 300); do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && return 0
    sleep 0.1
  done
  say "the node is not idle after 30 s (sinfo: '$state')"
  tail -20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2
  return 1
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF='$dir/slurm.conf'" ;;
  *) echo "usage: slurm.sh start|stop|env DIR" >&2; exit 2 ;;
esac
