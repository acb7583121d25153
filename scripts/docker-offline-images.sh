#!/usr/bin/env bash
# Build the offline stand-in images (images/offline/) for a host that cannot pull from a container registry.
#
# Every image starts from a Debian bookworm root file system made by debootstrap and imported into Docker,
# so the only network access needed is the Debian mirror (and Maven Central for the QuestDB jar, PyPI for
# the client later). Images get tsbs-offline/* names and never an upstream name, so nobody mistakes a
# stand-in for questdb/questdb or prom/prometheus. Reruns are fast: the root file system tarball is kept in
# .cache/docker/, the imported base is reused while it exists, and an image whose inputs (its build context,
# build arguments and base image) are those it was built from is not built again: each carries their digest
# as a label, so an image loaded from another engine (`docker save | docker -H NODE load`) counts as built.
#
#   scripts/docker-offline-images.sh            # the stack's stand-ins: build what is missing or stale
#   scripts/docker-offline-images.sh swarm-node # only those named: python questdb socat prometheus swarm-node questdb-qwp
#   scripts/docker-offline-images.sh --image questdb-qwp   # print a stand-in's image name, build nothing
#   DEBIAN_MIRROR=http://deb.debian.org/debian scripts/docker-offline-images.sh
#
# swarm-node (a Docker host in a container, for the multi-node swarm of tests/test_docker_swarm_nodes.py) and
# questdb-qwp (the QWP server of .env's QUESTDB_QWP, for make bench TRANSPORT=qwp: the questdb stand-in with that
# server's jar and this host's Java 25) are built only when named.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pinned versions from .env, unless the caller (make QUESTDB_VERSION=...) chose another.
QUESTDB_VERSION=${QUESTDB_VERSION:-$(sed -n 's/^QUESTDB_VERSION=//p' .env)}
QUESTDB_QWP=${QUESTDB_QWP:-$(sed -n 's/^QUESTDB_QWP=//p' .env)}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=.cache/docker
BASE_TAR=$CACHE/debian-bookworm-minbase.tar
BASE_IMAGE=tsbs-offline/debian:bookworm
JAR=.cache/questdb/questdb-$QUESTDB_VERSION.jar
HARNESS_PYTHON=${HARNESS_PYTHON:-.venv/bin/python}  # the project's environment (make setup), for the jar fetch

die() { echo "offline-images: $*" >&2; exit 1; }
step() { echo "offline-images: $*"; }

# The QWP server's stand-in is tagged as its pin names it: a Maven version as it is (10.0.0), a jar by its file name
# less questdb- and .jar (9.4.4-SNAPSHOT-qwp).
QWP_TAG=$(basename "$QUESTDB_QWP" .jar)
QWP_IMAGE=tsbs-offline/questdb:${QWP_TAG#questdb-}
if [ "${1:-}" = --image ]; then
    case ${2:-} in
        questdb) echo "tsbs-offline/questdb:$QUESTDB_VERSION" ;;
        questdb-qwp) echo "$QWP_IMAGE" ;;
        *) die "--image questdb | questdb-qwp" ;;
    esac
    exit 0
fi

docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed); start dockerd first"
mkdir -p "$CACHE"

make_base_tarball() {
    [ "$(id -u)" = 0 ] || die "debootstrap needs root to build $BASE_TAR (run once as root; later runs reuse it)"
    command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
    local root
    root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    # shellcheck disable=SC2064  # expand now: $root is local and gone by the time EXIT fires
    trap "rm -rf '$root'" EXIT
    step "debootstrap bookworm (minbase) from $DEBIAN_MIRROR, about a minute; log in $CACHE/debootstrap.log"
    debootstrap --variant=minbase bookworm "$root" "$DEBIAN_MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
        || die "debootstrap failed; see $CACHE/debootstrap.log"
    # The same apt sources as the official debian:bookworm image, so stand-ins get the point release's
    # security fixes like the upstream images do.
    cat >"$root/etc/apt/sources.list" <<EOF
deb $DEBIAN_MIRROR bookworm main
deb $DEBIAN_MIRROR bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
    # Package scripts must not try to start services inside an image build (prometheus' postinst would).
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
    chmod 755 "$root/usr/sbin/policy-rc.d"
    # Keep image layers small: no downloaded .debs or translations left behind, as in official images.
    cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
EOF
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/*.log
    # Docker provides /dev, /proc, /sys and resolv.conf at run time.
    tar -C "$root" --numeric-owner --exclude=./dev/* --exclude=./proc/* --exclude=./sys/* \
        -cf "$BASE_TAR.part" .
    mv "$BASE_TAR.part" "$BASE_TAR"
    rm -rf "$root"
    trap - EXIT
}

if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    [ -s "$BASE_TAR" ] || make_base_tarball
    step "docker import $BASE_TAR as $BASE_IMAGE"
    docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["bash"]' \
        "$BASE_TAR" "$BASE_IMAGE" >/dev/null
fi

# Build contexts are staged under .cache/ so that host-specific inputs (the jar, the CA bundle) never
# land in the source tree.
stage() {  # stage NAME: a fresh context directory holding images/offline/NAME/*
    local dir=$CACHE/context/$1
    rm -rf "$dir" && mkdir -p "$dir"
    cp -p images/offline/"$1"/* "$dir"/
    echo "$dir"
}

INPUTS_LABEL=tsbs-offline.inputs

build() {  # build TAG CONTEXT [docker build args...]: unless TAG was built from these very inputs
    local tag=$1 context=$2; shift 2
    local log=$CACHE/build-${tag//[\/:]/-}.log inputs
    # The context's files (names, modes and bytes, not their times), the build arguments and the base's id.
    inputs=$({ tar -C "$context" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - . \
        && printf '%s\n' "$@" "$(docker image inspect --format '{{.Id}}' "$BASE_IMAGE")"; } | sha256sum | cut -c 1-16)
    if [ "$(docker image inspect --format "{{index .Config.Labels \"$INPUTS_LABEL\"}}" "$tag" 2>/dev/null)" = "$inputs" ]; then
        step "$tag is up to date"
        return
    fi
    step "build $tag"
    # The engine's own output (and the CLI's note on the legacy builder) goes to a log, shown on failure.
    if ! docker build --build-arg "BASE_IMAGE=$BASE_IMAGE" --label "$INPUTS_LABEL=$inputs" "$@" -t "$tag" "$context" \
        >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        die "building $tag failed; full output in $log"
    fi
}

stand_in_python() {
    # Python for the client image. pip in a build needs the CA bundle this host trusts (a proxy's CA, say):
    # it is copied into the staged context at build time, never into the repository.
    local ctx
    ctx=$(stage python)
    if [ -r /etc/ssl/certs/ca-certificates.crt ]; then
        cp /etc/ssl/certs/ca-certificates.crt "$ctx/host-ca-certificates.crt"
    else
        : >"$ctx/host-ca-certificates.crt"
    fi
    build tsbs-offline/python:3.11-bookworm "$ctx"
}

stand_in_questdb() {
    if [ ! -s "$JAR" ]; then
        # The harness's own fetch (Maven Central through mvn, one-line errors), so there is one way to get it.
        step "fetch org.questdb:questdb:$QUESTDB_VERSION from Maven Central"
        "$HARNESS_PYTHON" -m harness native fetch >/dev/null || die "no QuestDB jar"
    fi
    local ctx
    ctx=$(stage questdb)
    cp -p "$JAR" "$ctx/questdb.jar"  # one name whatever the version, so the Dockerfile need not know it
    build "tsbs-offline/questdb:$QUESTDB_VERSION" "$ctx" --build-arg "QUESTDB_VERSION=$QUESTDB_VERSION"
}

stand_in_questdb_qwp() {
    # Its base, the release's stand-in, first (up to date); then the QWP server's jar and the Java that runs it here,
    # as the harness finds them (its sha256 checked; a missing jar or Java 25 in one line).
    stand_in_questdb
    local server jar java_home java_opts ctx
    server=$("$HARNESS_PYTHON" -m harness.servers.server_build qwp) || die "no QWP server to build $QWP_IMAGE from (above)"
    { read -r jar; read -r java_home; read -r java_opts; } <<<"$server"
    ctx=$(stage questdb-qwp)
    cp -p "$jar" "$ctx/questdb.jar"
    cp -a "$java_home" "$ctx/java"
    BASE_IMAGE=tsbs-offline/questdb:$QUESTDB_VERSION build "$QWP_IMAGE" "$ctx" \
        --build-arg "QUESTDB_QWP=$(basename "$jar")" --build-arg "JAVA_OPTS=$java_opts"
}

stand_in_socat() { build tsbs-offline/socat:bookworm "$(stage socat)"; }
stand_in_prometheus() { build tsbs-offline/prometheus:bookworm "$(stage prometheus)"; }
stand_in_swarm_node() { build tsbs-offline/swarm-node:bookworm "$(stage swarm-node)"; }

for image in "${@:-python questdb socat prometheus}"; do
    for name in $image; do
        case $name in
            python | questdb | socat | prometheus | swarm-node | questdb-qwp) "stand_in_${name//-/_}" ;;
            *) die "no stand-in $name (python, questdb, socat, prometheus, swarm-node, questdb-qwp)" ;;
        esac
    done
done

step "done: $(docker image ls --format '{{.Repository}}:{{.Tag}}' 'tsbs-offline/*' | sort | tr '\n' ' ')"
