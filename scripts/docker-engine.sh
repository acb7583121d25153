#!/usr/bin/env bash
# Make sure a Docker engine answers, for CI and throwaway machines: when none does, install Debian's
# docker.io (if dockerd is missing) and start dockerd in the background as root, logging to
# /var/log/dockerd.log. A machine with a running engine (systemd, Docker Desktop) is left alone.
set -euo pipefail

LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
die() { echo "docker-engine: $*" >&2; exit 1; }

if docker info >/dev/null 2>&1; then
    exit 0
fi
[ "$(id -u)" = 0 ] || die "no Docker engine answers and starting one needs root"
if ! command -v dockerd >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null || die "apt-get install docker.io failed"
fi
echo "docker-engine: starting dockerd (log: $LOG)"
# setsid: the daemon outlives this script and CI's shell, and a Ctrl-C there does not reach it.
setsid dockerd >>"$LOG" 2>&1 </dev/null &
for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && { echo "docker-engine: $(docker version --format 'engine {{.Server.Version}}')"; exit 0; }
    sleep 1
done
tail -n 5 "$LOG" >&2
die "dockerd did not answer within 60 s; see $LOG"
