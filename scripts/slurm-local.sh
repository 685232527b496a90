#!/usr/bin/env bash
# A real one-node SLURM with accounting on this machine, for the cluster tests and for trying the
# cluster route by hand. Needs root and Debian's slurm-wlm, slurmdbd, munge, mariadb-server
# (`scripts/slurm-local.sh install` installs them).
#
#   scripts/slurm-local.sh install   # apt-get the packages (once)
#   scripts/slurm-local.sh up        # write configs for this host, start mariadb, munge, slurmdbd,
#                                    # slurmctld, slurmd; register the cluster; wait until the node is idle
#   scripts/slurm-local.sh down      # stop everything started by `up`
#   scripts/slurm-local.sh status
#
# Without accounting (slurmdbd), `sacct` fails and submitit cannot see that a job died, so it would
# wait forever: this script always starts accounting.
set -euo pipefail

STATE=${SEQMIX_SLURM_STATE:-/tmp/seqmix-slurm}
CLUSTER=seqmix
HOST=$(hostname -s)
CONF=/etc/slurm

log() { echo "[slurm-local] $*" >&2; }

install_packages() {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm slurmdbd munge mariadb-server >/dev/null
}

write_configs() {
  local cpus mem
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) - 1024 ))
  mkdir -p "$CONF" "$STATE"/{spool/ctld,spool/d,log,run}
  cat >"$CONF/slurm.conf" <<CONFEOF
# written by seqmix scripts/slurm-local.sh for host $HOST
ClusterName=$CLUSTER
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobRequeue=1
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName=$HOST CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONFEOF
  cat >"$CONF/slurmdbd.conf" <<CONFEOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
LogFile=$STATE/log/slurmdbd.log
PidFile=$STATE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=seqmix
StorageLoc=slurm_acct_db
CONFEOF
  chmod 600 "$CONF/slurmdbd.conf"
  rm -f "$CONF/cgroup.conf"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local t=$1 what=$2; shift 2
  for _ in $(seq 1 $((t * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  log "timed out waiting for $what"; return 1
}

up() {
  command -v slurmctld >/dev/null || { log "SLURM is not installed: run '$0 install' (as root)"; exit 2; }
  [ "$(id -u)" = 0 ] || { log "must run as root"; exit 2; }
  write_configs
  # MariaDB
  if ! mysqladmin ping >/dev/null 2>&1; then
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
    [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql >/dev/null 2>&1
    (setsid mariadbd --user=mysql >"$STATE/log/mariadb.log" 2>&1 &)
    wait_for 60 mariadb mysqladmin ping
  fi
  # A fresh controller state restarts job ids at 1: drop old accounting records, or sacct would report an
  # old job's state for a new job with the same id (and submitit would take it for finished).
  if [ ! -e "$STATE/spool/ctld/job_state" ]; then
    mysql -e "DROP DATABASE IF EXISTS slurm_acct_db;"
  fi
  mysql -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db; CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'seqmix'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
  # munge
  if ! pgrep -x munged >/dev/null; then
    [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
    chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge && chown munge:munge /run/munge
    su -s /bin/sh munge -c "munged" 2>>"$STATE/log/munge.log" || munged --force
    wait_for 20 munge sh -c 'munge -n | unmunge'
  fi
  # accounting daemon, cluster registration
  pgrep -x slurmdbd >/dev/null || slurmdbd
  wait_for 60 slurmdbd sacctmgr -n list cluster
  sacctmgr -i add cluster "$CLUSTER" >/dev/null 2>&1 || true
  # controller and node
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd
  wait_for 60 "node $HOST idle" sh -c "sinfo -h -n $HOST -o %t | grep -Eq '^(idle|mix|alloc)'"
  log "up: $(sinfo -h -o '%P %D %t %N')"
}

down() {
  for d in slurmd slurmctld slurmdbd; do pkill -x "$d" 2>/dev/null || true; done
  sleep 1
  pkill -x munged 2>/dev/null || true
  mysqladmin shutdown >/dev/null 2>&1 || pkill -x mariadbd 2>/dev/null || true
  log "down"
}

status() {
  for d in mariadbd munged slurmdbd slurmctld slurmd; do
    printf '%-10s %s\n' "$d" "$(pgrep -x $d >/dev/null && echo running || echo stopped)"
  done
  sinfo 2>/dev/null || true
}

case "${1:-}" in
  install) install_packages ;;
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 install|up|down|status" >&2; exit 2 ;;
esac
