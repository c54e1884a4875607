#!/usr/bin/env bash
# A one-node SLURM on localhost (munged + slurmctld + slurmd), for trying deploy/slurm/launch.py
# and for tests/test_slurm.py. Debian: apt-get install slurm-wlm munge. Needs root (slurmd
# starts each job as its submitting user).
#
#   deploy/slurm/local-cluster.sh start  [DIR]   configure and start; prints SLURM_CONF=DIR/slurm.conf
#   deploy/slurm/local-cluster.sh status [DIR]   the daemons' pids and `sinfo`
#   deploy/slurm/local-cluster.sh stop   [DIR]   cancel every job of this cluster, stop the daemons
#
# DIR (default ${TMPDIR:-/tmp}/dpriv-slurm) holds everything: slurm.conf, the munge key and
# socket, slurmctld's state, slurmd's spool, pid files, logs (log/*.log) and the completed-job
# record log/jobcomp.txt (jobcomp/filetxt: no slurmdbd, so `sacct` has nothing to read). It is
# created by `start`; an existing DIR that `start` did not create is refused. Nothing outside
# DIR is written; /etc/slurm and /etc/munge are left alone. Both commands are idempotent:
# `start` starts only what is not running, `stop` on a stopped cluster does nothing. `stop`
# keeps DIR (the logs); remove it yourself. Use the cluster with:
#   export SLURM_CONF=DIR/slurm.conf; sbatch ...; squeue
#
# No cgroups are needed: ProctrackType=proctrack/linuxproc, TaskPlugin=task/none,
# SelectType=select/cons_tres with CR_Core (2 CPUs by default; LOCAL_SLURM_CPUS and
# LOCAL_SLURM_MEMORY_MB, in MB, override the node's size).
#
# Exit status: 0 done; 1 a daemon failed (its last log lines are printed, what this call started
# is stopped again); 2 bad usage or a DIR that is not ours; 3 SLURM cannot run here (not root, or
# slurm-wlm/munge absent), with the reason on stderr.
set -uo pipefail

MARKER=.dpriv-local-slurm
cmd=${1:-}
DIR=${2:-${TMPDIR:-/tmp}/dpriv-slurm}
case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
CONF=$DIR/slurm.conf
export SLURM_CONF=$CONF

die() { echo "local-cluster: $2" >&2; exit "$1"; }

pid_of() {  # pid_of NAME: the pid in DIR/run/NAME.pid when that process runs with DIR/ in its command line
    local pid
    pid=$(cat "$DIR/run/$1.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$DIR/" || return 1
    echo "$pid"
}

log_tail() {  # log_tail NAME: the last lines of a daemon's log, for the error message
    echo "--- $DIR/log/$1.log (last lines; the MPI/PMIx plugin errors, harmless here, left out):" >&2
    [ -f "$DIR/log/$1.log" ] || { echo "(no log written)" >&2; return 0; }
    grep -v -E 'pmix|PMIx|MPI: Cannot create context' "$DIR/log/$1.log" | tail -n 8 >&2
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

write_config() {
    mkdir -p "$DIR"/{munge,key,run,log,state,spool/localhost} || die 2 "cannot create $DIR"
    # munged wants its socket's folders searchable by all (x, not r) and its key private
    chmod 711 "$DIR" && chmod 755 "$DIR/munge" && chmod 700 "$DIR/key"
    [ -f "$DIR/key/munge.key" ] || mungekey --create --keyfile="$DIR/key/munge.key" \
        || die 1 "mungekey could not create $DIR/key/munge.key"
    [ -f "$CONF" ] && return 0
    local cpus=${LOCAL_SLURM_CPUS:-2} mem=${LOCAL_SLURM_MEMORY_MB:-}
    if [ -z "$mem" ]; then  # MemAvailable minus 1 GiB, at least 1 GiB
        mem=$(awk '/^MemAvailable:/ {m = int($2 / 1024) - 1024; print (m < 1024 ? 1024 : m)}' /proc/meminfo)
    fi
    cat >"$CONF.tmp" <<EOF
# written by deploy/slurm/local-cluster.sh: a one-node SLURM on localhost, everything under $DIR
ClusterName=dprivlocal
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
MailProg=/bin/true
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=30
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
    mv "$CONF.tmp" "$CONF"
}

wait_for() {  # wait_for SECONDS COMMAND...: poll COMMAND every 0.5 s until it exits 0; give up
    # after SECONDS, or at once when it exits 2
    local end=$((SECONDS + $1)) rc; shift
    while true; do
        "$@" >/dev/null 2>&1
        rc=$?
        [ "$rc" = 0 ] && return 0
        [ "$rc" = 2 ] || [ "$SECONDS" -ge "$end" ] && return 1
        sleep 0.5
    done
}

ctld_up() { scontrol ping >/dev/null 2>&1; }
node_state() { sinfo -h -N -n localhost -o %T 2>/dev/null; }
# 0 once the node takes jobs, 1 while it registers, 2 refused (invalid or drained: no use waiting)
node_up() {
    case "$(node_state)" in
        idle* | mixed* | allocated*) return 0 ;;
        inval* | drain*) return 2 ;;
        *) return 1 ;;
    esac
}

start() {
    if [ -e "$DIR" ] && [ ! -f "$DIR/$MARKER" ]; then
        die 2 "$DIR exists and was not made by local-cluster.sh: give a folder that does not exist yet"
    fi
    [ "$(id -u)" = 0 ] || die 3 "needs root (slurmd runs each job as its submitting user); this is uid $(id -u)"
    local b
    for b in munged mungekey slurmctld slurmd sinfo sbatch scontrol; do
        command -v "$b" >/dev/null || die 3 "$b not found: install SLURM and munge (Debian: apt-get install slurm-wlm munge)"
    done
    mkdir -p "$DIR" && touch "$DIR/$MARKER" || die 2 "cannot create $DIR"
    write_config
    local started=()
    if ! pid_of munged >/dev/null; then
        if ! munged --socket="$DIR/munge/munge.socket" --key-file="$DIR/key/munge.key" \
            --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
            --seed-file="$DIR/key/munged.seed" --num-threads=2 2>/dev/null \
            || ! wait_for 10 pid_of munged || ! wait_for 10 test -S "$DIR/munge/munge.socket"; then
            echo "local-cluster: munged did not start" >&2; log_tail munged
            stop_daemons munged; exit 1
        fi
        started+=(munged)
    fi
    if ! pid_of slurmctld >/dev/null; then
        if ! slurmctld -f "$CONF" -i 2>>"$DIR/log/slurmctld.log" || ! wait_for 30 pid_of slurmctld || ! wait_for 30 ctld_up; then
            echo "local-cluster: slurmctld did not start" >&2; log_tail slurmctld
            stop_daemons "${started[@]}"; exit 1
        fi
        started+=(slurmctld)
    fi
    if ! pid_of slurmd >/dev/null; then
        if ! slurmd -f "$CONF" -N localhost 2>>"$DIR/log/slurmd.log" || ! wait_for 30 pid_of slurmd; then
            echo "local-cluster: slurmd did not start" >&2; log_tail slurmd
            stop_daemons "${started[@]}"; exit 1
        fi
        started+=(slurmd)
    fi
    if ! wait_for 60 node_up; then
        echo "local-cluster: node localhost is not up: $(sinfo -h -N -o '%T %E' 2>&1)" >&2
        log_tail slurmd; log_tail slurmctld
        stop_daemons "${started[@]}"; exit 1
    fi
    echo "local SLURM running in $DIR (started: ${started[*]:-nothing, already running})"
    echo "SLURM_CONF=$CONF"
}

stop_daemons() {  # stop_daemons NAME...: SIGTERM our daemons, SIGKILL after 15 s
    local name pid n
    for name in "$@"; do
        pid=$(pid_of "$name") || continue
        kill "$pid" 2>/dev/null
        for n in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    done
    return 0
}

stop() {
    [ -f "$DIR/$MARKER" ] || { echo "no local SLURM in $DIR: nothing to stop"; return 0; }
    if pid_of slurmctld >/dev/null; then
        # every job of this cluster, whoever submitted it (Dask workers included), then wait
        # until slurmd has reaped them
        local jobs
        jobs=$(squeue -h -o %i 2>/dev/null)
        # shellcheck disable=SC2086
        [ -z "$jobs" ] || scancel --full --quiet $jobs 2>/dev/null
        wait_for 30 bash -c '[ -z "$(squeue -h -o %i 2>/dev/null)" ]' \
            || echo "local-cluster: jobs still listed after 30 s: $(squeue -h -o '%i %T' | tr '\n' ' ')" >&2
    fi
    stop_daemons slurmd slurmctld munged
    echo "local SLURM in $DIR stopped (logs kept in $DIR/log)"
}

status() {
    local name pid rc=0
    for name in munged slurmctld slurmd; do
        if pid=$(pid_of "$name"); then echo "$name: running, pid $pid"; else echo "$name: not running"; rc=1; fi
    done
    [ "$rc" = 0 ] && sinfo -N
    return "$rc"
}

case "$cmd" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) die 2 "usage: $0 start|stop|status [DIR]" ;;
esac
