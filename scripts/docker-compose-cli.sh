#!/usr/bin/env bash
# Install the Docker Compose v2 CLI plugin where the distribution has none (Debian bookworm's docker.io
# ships no `docker compose`): build the pinned release from the Go module cache (the Go module proxy is
# reachable where GitHub release downloads may not be), once, into .cache/docker/, and install a copy as a
# CLI plugin, so it outlives this clone: as root system-wide in /usr/local/lib/docker/cli-plugins/, else in
# ~/.docker/cli-plugins/ (remove that file to uninstall). `go install` cannot build it (its go.mod has
# replace directives), hence download + build.
#
#   scripts/docker-compose-cli.sh      # no-op when `docker compose version` already works
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${COMPOSE_VERSION:-v2.40.3}
BIN=$PWD/.cache/docker/docker-compose-$VERSION
if [ "$(id -u)" = 0 ]; then
    PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
else
    PLUGIN_DIR=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
fi

die() { echo "compose-cli: $*" >&2; exit 1; }

if docker compose version >/dev/null 2>&1; then
    exit 0
fi
if [ ! -x "$BIN" ]; then
    command -v go >/dev/null || die "Go is needed to build Docker Compose $VERSION (Go 1.24 or newer)"
    echo "compose-cli: building Docker Compose $VERSION from the Go module cache (a few minutes, once)"
    go mod download "github.com/docker/compose/v2@$VERSION" || die "go mod download of compose $VERSION failed"
    src=$(go env GOMODCACHE)/github.com/docker/compose/v2@$VERSION
    # The version stamp the release build sets, so `docker compose version` reports it.
    (cd "$src" && CGO_ENABLED=0 go build -trimpath \
        -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$VERSION" -o "$BIN.part" ./cmd) \
        || die "go build of compose $VERSION failed"
    mv "$BIN.part" "$BIN"
fi
mkdir -p "$PLUGIN_DIR"
install -m 755 "$BIN" "$PLUGIN_DIR/docker-compose"
docker compose version >/dev/null 2>&1 || die "docker compose still fails after installing $PLUGIN_DIR/docker-compose"
echo "compose-cli: $(docker compose version)"
