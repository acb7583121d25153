#!/usr/bin/env bash
# Input checks and defaults for the Makefile's Docker targets, run while make reads the Makefile so that a
# bad input ends in make's one-line `*** ... Stop.` before anything starts.
#
#   scripts/docker-check.sh cpus             print the default CPU split "QDB CLIENT" for this host
#   scripts/docker-check.sh shares SET N     split a client CPU set among N clients: N sets, contiguous
#                                            shares (with fewer CPUs than clients, one CPU each, reused)
#   scripts/docker-check.sh check GOAL...    print the first problem for these make goals (nothing: fine)
#
# `check` reads WORKERS, ROWS, TRANSPORT, QSCALE, QUERIES, QWORKERS, QPROTOCOL, QLOAD, QDB_CPUS, CLIENT_CPUS, RESULTS,
# OFFLINE, AUTH, QUESTDB_USER (never a password: it would be on this command line), PROFILE, QUESTDB_UID, SWARM_TIMEOUT,
# QUESTDB_CPU_LIMIT, CLIENT_CPU_LIMIT, HOST_CORES and compose.yaml's PUBLISH_* ports
# from the environment; a published port held by anything but this Compose project is named with how to stop
# it. It always exits 0: the Makefile turns a printed problem into $(error).
set -uo pipefail

host_cores=${HOST_CORES:-$(getconf _NPROCESSORS_ONLN)}

range() {  # range FIRST LAST: cpuset notation, "3" rather than "3-3"
    if [ "$1" -eq "$2" ]; then echo "$1"; else echo "$1-$2"; fi
}

default_cpus() {
    # A quarter of the cores for the client (at least one), the rest for QuestDB, low cores first:
    # 16 cores (a 5950X) give QuestDB 0-11, the original benchmark's 12 threads, and the client 12-15;
    # 2 cores give one each. One core cannot be split; the check then asks for explicit sets.
    local n=$host_cores client
    client=$((n / 4))
    [ "$client" -ge 1 ] || client=1
    if [ "$n" -lt 2 ]; then echo "- -"; return; fi
    echo "$(range 0 $((n - client - 1))) $(range $((n - client)) $((n - 1)))"
}

cpu_list() {  # cpu_list SET: the CPU numbers of a cpuset ("0-3,8" -> "0 1 2 3 8"); status 1 if malformed
    local part first last out=()
    [[ $1 =~ ^[0-9]{1,5}(-[0-9]{1,5})?(,[0-9]{1,5}(-[0-9]{1,5})?)*$ ]] || return 1
    IFS=, read -ra parts <<<"$1"
    for part in "${parts[@]}"; do
        first=${part%-*} last=${part#*-}
        [ "$((10#$first))" -le "$((10#$last))" ] || return 1
        for ((cpu = 10#$first; cpu <= 10#$last; cpu++)); do out+=("$cpu"); done
    done
    echo "${out[*]}"
}

shares() {  # shares SET N
    local cpus size extra start=0 client end share
    read -ra cpus <<<"$(cpu_list "$1")"
    local n=${#cpus[@]} clients=$2 out=()
    if [ "$clients" -gt "$n" ]; then
        for ((client = 0; client < clients; client++)); do out+=("${cpus[client % n]}"); done
    else
        size=$((n / clients)) extra=$((n % clients))
        for ((client = 0; client < clients; client++)); do
            end=$((start + size + (client < extra ? 1 : 0)))
            share=$(printf '%s,' "${cpus[@]:start:end-start}")
            out+=("${share%,}")
            start=$end
        done
    fi
    echo "${out[*]}"
}

check_cpus() {  # check_cpus NAME SET
    local cpu
    cpu_list "$2" >/dev/null || { echo "$1 must be a CPU set like 0-11 or 0,2,4 (got '$2')"; return 1; }
    # The numbers as written suffice (a range's ends): no need to expand 0-99999 to find the culprit.
    for cpu in ${2//[,-]/ }; do
        cpu=$((10#$cpu))
        if [ "$cpu" -ge "$host_cores" ]; then
            echo "$1=$2 names CPU $cpu, but this host has $host_cores cores (0-$((host_cores - 1)))"
            return 1
        fi
    done
}

positive_int() {  # positive_int NAME VALUE [optional]
    [ -z "$2" ] && [ "${3:-}" = optional ] && return 0
    [[ $2 =~ ^[0-9]+$ ]] && [ "$((10#$2))" -gt 0 ] && return 0
    echo "$1 must be a positive integer (got '$2')"
    return 1
}

cpu_limit() {  # cpu_limit NAME VALUE: empty (no limit) or a positive number of CPUs
    [ -z "$2" ] && return 0
    [[ $2 =~ ^[0-9]*\.?[0-9]+$ ]] && [[ $2 =~ [1-9] ]] && return 0
    echo "$1 must be a positive number of CPUs like 2 or 1.5, or empty for no limit (got '$2')"
    return 1
}

port_holder() {  # port_holder PORT: who listens on PORT, with how to stop it; nothing when free or our stack
    local port=$1 line pid name project
    line=$(ss -Hltnp "sport = :$port" 2>/dev/null | head -n 1)
    [ -n "$line" ] || return 0
    pid=$(grep -o 'pid=[0-9]*' <<<"$line" | head -n 1 | cut -d= -f2)
    name=$(grep -o '(("[^"]*"' <<<"$line" | head -n 1 | cut -d'"' -f2)
    if [ "$name" = docker-proxy ] || [ -z "$pid" ]; then
        # A container publishes it: fine if it is this stack's own (make up, then make bench).
        project=$(docker ps --filter "publish=$port" --format '{{.Label "com.docker.compose.project"}} {{.Names}}' 2>/dev/null | head -n 1)
        [ -z "$project" ] && [ "$name" != docker-proxy ] && { echo "port $port is taken (by a process this user cannot see)"; return; }
        [ "${project%% *}" = "${COMPOSE_PROJECT_NAME:-tsbs-pandas-questdb}" ] && return 0
        if [ "${project%% *}" = tsbs-pandas-questdb ]; then
            echo "port $port is published by this project's own stack (container ${project#* }): make down stops it"
        else
            echo "port $port is published by container ${project#* } (Compose project ${project%% *}): stop it first"
        fi
    elif grep -q 'io.questdb' "/proc/$pid/cmdline" 2>/dev/null; then
        echo "port $port is taken by a native QuestDB (pid $pid): make native-down stops it"
    else
        echo "port $port is taken by $name (pid $pid): stop it first"
    fi
}

# The goals by what they start: the whole stack (QuestDB, Prometheus, Grafana online), a client container
# (its inputs and RESULTS), and either (CPU sets, published ports). noop-sink starts the sink and Prometheus.
STACK_GOALS="bench queries up"
CLIENT_GOALS="bench noop-sink queries"

has_goal() {  # has_goal "GOALS" "WANTED...": whether any wanted goal is among the goals
    local goal
    for goal in $2; do [[ " $1 " == *" $goal "* ]] && return 0; done
    return 1
}

check_ports() {  # check_ports GOALS: the host ports compose.yaml publishes for these goals, free or ours
    local port ports="${PUBLISH_HTTP_PORT:-9000} ${PUBLISH_ILP_PORT:-9009} ${PUBLISH_PG_PORT:-8812} ${PUBLISH_MIN_PORT:-9003} ${PUBLISH_PROMETHEUS_PORT:-9090}"
    has_goal "$*" "$STACK_GOALS" || ports=${PUBLISH_PROMETHEUS_PORT:-9090}  # noop-sink alone
    [ -n "${OFFLINE:-}" ] || ! has_goal "$*" "$STACK_GOALS" || ports="$ports ${PUBLISH_GRAFANA_PORT:-3000}"
    local problem
    for port in $ports; do
        problem=$(port_holder "$port")
        [ -z "$problem" ] || { echo "$problem"; return 1; }
    done
}

check() {
    local goals=" $* " qdb_cpus client_cpus other_goals
    read -r qdb_cpus client_cpus <<<"$(default_cpus)"
    qdb_cpus=${QDB_CPUS:-$qdb_cpus} client_cpus=${CLIENT_CPUS:-$client_cpus}

    [[ ${AUTH:-0} =~ ^[01]$ ]] || { echo "AUTH must be 0 or 1 (QuestDB asking for logins; got '${AUTH:-}')"; return; }
    if [ -n "${QUESTDB_USER:-}" ] && [[ ! $QUESTDB_USER =~ ^[A-Za-z0-9_.-]+$ ]]; then
        echo "QUESTDB_USER may hold letters, digits, '_', '.' and '-' only (got '$QUESTDB_USER')"
        return
    fi

    [[ ${PROFILE:-0} =~ ^[01]$ ]] || { echo "PROFILE must be 0 or 1 (profile the run, client and QuestDB; got '${PROFILE:-}')"; return; }
    if [ "${PROFILE:-0}" = 1 ]; then
        if has_goal "$goals" swarm-bench; then
            echo "PROFILE=1 profiles a run of one client beside QuestDB (bench, queries, noop-sink): swarm-bench's clients are not profiled"
            return
        fi
        if has_goal "$goals" "bench noop-sink" && [ "${CLIENTS:-1}" != 1 ]; then
            echo "PROFILE=1 samples one client process: CLIENTS must be 1 (got '${CLIENTS}')"
            return
        fi
        # The profiled client runs as QuestDB's user, whose JVM answers no other (compose.profile.yaml).
        if has_goal "$goals" "bench queries" && [ "$(id -u)" != 0 ] && [ -d results ] \
            && [ "$(stat -c %u results)" != "${QUESTDB_UID:-10001}" ] && [ $((8#$(stat -c %a results) & 2)) = 0 ]; then
            echo "PROFILE=1 runs the client as QuestDB's user (${QUESTDB_UID:-10001}), who cannot write results/: chmod o+w results, or run make as root"
            return
        fi
    fi
    if has_goal "$goals" "bench noop-sink swarm-bench"; then
        positive_int WORKERS "${WORKERS:-}" optional || return
        positive_int ROWS "${ROWS:-}" || return
        positive_int CLIENTS "${CLIENTS:-1}" || return
        if has_goal "$goals" noop-sink && [ "${CLIENTS:-1}" != 1 ]; then
            echo "noop-sink runs one client: the clients of a scale-out run meet at QuestDB, which the sink is not"
            return
        fi
        if has_goal "$goals" noop-sink && [ "${TRANSPORT:-tcp}" != tcp ]; then
            echo "noop-sink takes TRANSPORT=tcp only: the socat sink discards ILP over TCP and never answers (got '${TRANSPORT}')"
            return
        fi
    fi
    if has_goal "$goals" queries; then
        positive_int QSCALE "${QSCALE:-}" || return
        positive_int QUERIES "${QUERIES:-}" || return
        positive_int QWORKERS "${QWORKERS:-}" || return
        [[ ${QPROTOCOL:-} =~ ^(pgwire|http)$ ]] || { echo "QPROTOCOL must be pgwire or http (got '${QPROTOCOL:-}')"; return; }
        [[ ${QLOAD:-} =~ ^[01]$ ]] || { echo "QLOAD must be 1 (load the data set first) or 0 (got '${QLOAD:-}')"; return; }
    fi
    if has_goal "$goals" swarm-bench; then
        positive_int SWARM_TIMEOUT "${SWARM_TIMEOUT:-}" || return
        cpu_limit QUESTDB_CPU_LIMIT "${QUESTDB_CPU_LIMIT:-}" || return
        cpu_limit CLIENT_CPU_LIMIT "${CLIENT_CPU_LIMIT:-}" || return
    fi
    if has_goal "$goals" "$CLIENT_GOALS swarm-bench" && [ -n "${RESULTS:-}" ] && [[ ! ${RESULTS} =~ ^(\./)?results/[^/]+$ ]]; then
        echo "RESULTS must name a file in results/ (the only directory the client container sees), got '$RESULTS'"
        return
    fi
    if has_goal "$goals" "$CLIENT_GOALS up"; then
        if [ "$qdb_cpus" = - ] || [ "$client_cpus" = - ]; then
            echo "this host has $host_cores core: set QDB_CPUS and CLIENT_CPUS explicitly (server and client then share it)"
            return
        fi
        check_cpus QDB_CPUS "$qdb_cpus" || return
        check_cpus CLIENT_CPUS "$client_cpus" || return
        local shared
        shared=$(comm -12 <(cpu_list "$qdb_cpus" | tr ' ' '\n' | sort) <(cpu_list "$client_cpus" | tr ' ' '\n' | sort) | sort -n | xargs)
        # Allowed (one may want to measure exactly that), but never by accident.
        [ -z "$shared" ] || echo "warning: QuestDB and the client share CPUs $shared; their timings will interfere" >&2
    fi
    # Last, as it is the slowest: an engine that answers, and the Compose v2 plugin.
    if ! command -v docker >/dev/null; then
        echo "docker is not installed (Docker Engine with the Compose v2 plugin is needed; see README, Docker)"
    elif ! timeout 20 docker info >/dev/null 2>&1; then
        echo "Docker is not running: 'docker info' gets no answer from the engine (start it: systemctl start docker, or dockerd)"
    elif other_goals=${goals// offline-images / } && [ -n "${other_goals// /}" ] \
        && ! docker compose version >/dev/null 2>&1; then  # offline-images alone needs no Compose
        echo "the Docker Compose v2 plugin is missing: 'docker compose version' fails (see docs/docker.md)"
    elif has_goal "$goals" "$CLIENT_GOALS up"; then
        check_ports "$@"
    fi
}

case ${1:-} in
    cpus) default_cpus ;;
    shares) shares "$2" "$3" ;;
    check) shift; check "$@" ;;
    *) echo "usage: $0 cpus | shares SET N | check GOAL..." >&2; exit 2 ;;
esac
exit 0
