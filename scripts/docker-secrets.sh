#!/usr/bin/env bash
# The secrets of the Docker targets, handed to the one command this runs through its environment: never on a
# command line (make's echo, `ps`), never in a file under results/. The Makefile puts it in front of every
# docker command of its Compose and Swarm targets. docs/security.md#the-compose-stack.
#
#   scripts/docker-secrets.sh COMMAND [ARG...]     exec COMMAND with the variables below set
#
# Always: GRAFANA_ADMIN_PASSWORD as the caller's environment gives it, else the one kept in
# $SECRETS_DIR/grafana-admin-password (made on first use: 24 random characters, a 0600 file).
#
# AUTH=1 (QuestDB asks for logins; compose.auth.yaml): QuestDB's user and password from
# $SECRETS_DIR/questdb-auth/user and .../password (0600 files in a 0700 folder, made on first use: a user
# bench-<8 hex digits> and 24 random characters; QUESTDB_USER and QUESTDB_PASSWORD, when the environment gives
# them, replace what is kept), exported as
#   QDB_HTTP_USER, QDB_HTTP_PASSWORD, QDB_PG_USER, QDB_PG_PASSWORD   QuestDB's own settings (http.user ...)
#   QDB_CLIENT_CONF   the client's configuration string: CLIENT_CONF (the Makefile's, without a login) with
#                     username=...;password=...; (a ';' in the password written ';;')
#   PGUSER, PGPASSWORD                  libpq's, which the client's PGWire connections read
#   QUESTDB_AUTH_DIR                    the folder, for compose.auth.yaml's Prometheus configuration
#   QDB_HTTP_PASSWORD_FILE              the password's file, for a Swarm stack's secret (scripts/swarm-stack.py)
#   QUESTDB_LOGIN_DIGEST                a digest of the login, salted with a random value kept beside it: it
#                                       changes with the login, so Compose makes Prometheus anew (no secret)
# and $SECRETS_DIR/questdb-auth/prometheus.yml is written: conf/prometheus.yml with the login on QuestDB's job
# (the user name; the password from a file Compose mounts as a secret).
#
# From the environment: SECRETS_DIR (default .cache), AUTH (0 or 1), CLIENT_CONF, and the given values above.
set -euo pipefail

SECRETS_DIR=${SECRETS_DIR:-.cache}
USER_PATTERN='^[A-Za-z0-9_.-]+$'

die() { echo "docker-secrets: $*" >&2; exit 2; }

random_secret() {  # 24 characters of [A-Za-z0-9_-] (18 random bytes)
    head -c 18 /dev/urandom | base64 | tr '+/' '-_'
}

random_user() {  # bench-<8 hex digits>
    printf 'bench-%s' "$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
}

kept() {  # kept FILE GIVEN NEW: the value GIVEN (written to FILE), else FILE's, else one NEW prints (written)
    local file=$1 given=$2 value
    if [ -n "$given" ]; then
        value=$given
    elif [ -s "$file" ]; then
        printf '%s' "$(<"$file")"
        return
    else
        value=$($3)
    fi
    # printf is a builtin: the value is on no command line. umask: the file is its owner's alone.
    (umask 077 && printf '%s' "$value" >"$file.part" && mv -f "$file.part" "$file")
    printf '%s' "$value"
}

mkdir -p "$SECRETS_DIR"
# Made before it is read: the given value, else the kept one, else a new one.
GRAFANA_ADMIN_PASSWORD=${GRAFANA_ADMIN_PASSWORD:-$(kept "$SECRETS_DIR/grafana-admin-password" '' random_secret)}
export GRAFANA_ADMIN_PASSWORD

case ${AUTH:-0} in
    0 | '') ;;
    1)
        auth=$SECRETS_DIR/questdb-auth
        (umask 077 && mkdir -p "$auth")
        [ -z "${QUESTDB_USER:-}" ] || [[ $QUESTDB_USER =~ $USER_PATTERN ]] \
            || die "QUESTDB_USER may hold letters, digits, '_', '.' and '-' only"
        [[ ${QUESTDB_PASSWORD:-} != *$'\n'* ]] || die "QUESTDB_PASSWORD must be one line"
        user=$(kept "$auth/user" "${QUESTDB_USER:-}" random_user)
        password=$(kept "$auth/password" "${QUESTDB_PASSWORD:-}" random_secret)
        [[ $user =~ $USER_PATTERN ]] || die "$auth/user must hold letters, digits, '_', '.' and '-' only"
        [ -n "$password" ] || die "$auth/password is empty"
        export QDB_HTTP_USER=$user QDB_HTTP_PASSWORD=$password QDB_PG_USER=$user QDB_PG_PASSWORD=$password
        export PGUSER=$user PGPASSWORD=$password
        export QDB_CLIENT_CONF="${CLIENT_CONF:-http::addr=questdb:9000;}username=$user;password=${password//;/;;};"
        QUESTDB_AUTH_DIR=$(cd "$auth" && pwd)
        export QUESTDB_AUTH_DIR QDB_HTTP_PASSWORD_FILE=$QUESTDB_AUTH_DIR/password
        salt=$(kept "$auth/salt" '' random_secret)
        QUESTDB_LOGIN_DIGEST=$(printf '%s\n%s\n%s' "$salt" "$user" "$password" | sha256sum | cut -c 1-16)
        export QUESTDB_LOGIN_DIGEST
        # Prometheus logs in to QuestDB's /metrics: the user name here, the password from the secret
        # compose.auth.yaml mounts. Readable by all: Prometheus runs as nobody, and it holds no secret.
        awk -v user="$user" '{ print } /^  - job_name: questdb$/ {
                print "    basic_auth:"
                print "      username: \"" user "\""
                print "      password_file: /run/secrets/questdb-http-password"
            }' conf/prometheus.yml >"$auth/prometheus.yml.part"
        grep -q password_file "$auth/prometheus.yml.part" || die "conf/prometheus.yml has no job questdb to log in"
        chmod 644 "$auth/prometheus.yml.part"
        mv -f "$auth/prometheus.yml.part" "$auth/prometheus.yml"
        ;;
    *) die "AUTH must be 0 or 1 (got '$AUTH')" ;;
esac

exec "$@"
