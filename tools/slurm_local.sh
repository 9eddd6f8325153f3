#!/usr/bin/env bash
# A one-node Slurm cluster on localhost, for the grid's Slurm launcher tests
# and for trying `--launcher slurm` on one machine (docs/grids.md, "On a Slurm
# cluster"). Debian's slurm-wlm and munge (tools/setup.sh installs them).
#
#   tools/slurm_local.sh start    configure and start munged, slurmctld, slurmd;
#                                 wait until sinfo shows the node idle
#   tools/slurm_local.sh stop     stop them (TERM, then KILL after 10 s)
#   tools/slurm_local.sh status   exit 0 when the cluster answers
#   tools/slurm_local.sh env      print `export SLURM_CONF=...` (eval it)
#
# Everything lives in $TVLAB_SLURM_DIR (default /tmp/tvlab-slurm): slurm.conf,
# a munge key (generated if missing), sockets, pid files, spool and state
# directories, and the daemons' logs (*.log). Slurm's client commands (sbatch,
# squeue, sinfo, sacct) find this cluster through SLURM_CONF.
# No cgroups: proctrack/linuxproc and task/none; the daemons run as root
# (SlurmUser=root), which is what a container allows. `start` on a running,
# answering cluster does nothing; exit code 0 on success, 1 with the reason
# (and the tail of the daemons' logs) otherwise.
set -euo pipefail

DIR="${TVLAB_SLURM_DIR:-/tmp/tvlab-slurm}"
CONF="$DIR/slurm.conf"
PARTITION="${TVLAB_SLURM_PARTITION:-debug}"
export SLURM_CONF="$CONF"

die() {
  echo "slurm_local: $*" >&2
  exit 1
}

# The daemons' logs, for the reason a start failed.
show_logs() {
  for log in "$DIR"/munged.log "$DIR"/slurmctld.log "$DIR"/slurmd.log; do
    [ -f "$log" ] && { echo "--- $log (last lines)" >&2; tail -n 15 "$log" >&2; }
  done
  return 0
}

pid_alive() {  # pid file
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

node_state() {
  sinfo -h -N -n localhost -o '%T' 2>/dev/null | head -n 1
}

write_conf() {
  local cpus mem_mb
  cpus="$(nproc)"
  # RealMemory a little under what the machine has, so slurmd accepts the node.
  mem_mb="$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"
  cat >"$CONF" <<EOF
# Written by tools/slurm_local.sh: a one-node cluster on localhost.
ClusterName=tvlab
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge.socket
SlurmctldPort=${TVLAB_SLURMCTLD_PORT:-16817}
SlurmdPort=${TVLAB_SLURMD_PORT:-16818}
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.txt
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=10
Waittime=0
MaxArraySize=1001
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=$PARTITION Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  [ "$(id -u)" -eq 0 ] ||
    die "needs root: this one-node cluster runs its daemons as root (SlurmUser=root; slurmd starts every job as its user)"
  for tool in munged mungekey slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null ||
      die "'$tool' is not installed; run tools/setup.sh (Debian packages slurm-wlm and munge)"
  done
  if pid_alive "$DIR/slurmctld.pid" && pid_alive "$DIR/slurmd.pid" && [ "$(node_state)" = idle ]; then
    echo "slurm_local: already running ($CONF)"
    return 0
  fi
  stop_daemons quiet
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/munge"
  chmod 700 "$DIR/munge"
  if [ ! -s "$DIR/munge/munge.key" ]; then
    mungekey --create --keyfile="$DIR/munge/munge.key" >/dev/null 2>&1 ||
      dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 400 "$DIR/munge/munge.key"
  write_conf

  # --force: munged refuses to run as root, or with a key in /tmp, without it.
  munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge.socket" \
    --pid-file="$DIR/munged.pid" --log-file="$DIR/munged.log" --seed-file="$DIR/munge/munge.seed" \
    >/dev/null 2>&1 || { show_logs; die "munged did not start"; }
  # -c: a clean start (no jobs from an earlier cluster in this directory).
  slurmctld -c -f "$CONF" >/dev/null 2>&1 || { show_logs; die "slurmctld did not start"; }
  slurmd -f "$CONF" >/dev/null 2>&1 || { show_logs; die "slurmd did not start"; }

  local state=""
  for _ in $(seq 1 60); do
    state="$(node_state)"
    [ "$state" = idle ] && break
    sleep 0.5
  done
  if [ "$state" != idle ]; then
    show_logs
    die "the node did not become idle in 30 s (state: '${state:-no answer}')"
  fi
  echo "slurm_local: one-node cluster up (partition '$PARTITION'); export SLURM_CONF=$CONF"
}

# TERM each daemon by its pid file, then KILL what is left after 10 s.
stop_daemons() {
  local quiet="${1:-}" any=0
  for name in slurmd slurmctld munged; do
    local pidfile="$DIR/$name.pid"
    pid_alive "$pidfile" || continue
    any=1
    local pid
    pid="$(cat "$pidfile")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
      [ -n "$quiet" ] || echo "slurm_local: $name ($pid) did not stop on TERM; killed" >&2
    fi
    rm -f "$pidfile"
  done
  [ -n "$quiet" ] || { [ "$any" = 1 ] && echo "slurm_local: stopped" || echo "slurm_local: not running"; }
}

case "${1:-}" in
  start) start ;;
  stop) stop_daemons ;;
  status)
    [ "$(node_state)" = idle ] || [ "$(node_state)" = mixed ] || [ "$(node_state)" = allocated ] ||
      die "no answer from the cluster configured in $CONF"
    echo "slurm_local: up ($CONF)"
    ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
