#!/usr/bin/env bash
# `make bench CLIENTS=N` in Docker: N client containers, client i sending TSBS's interleaved group i of N on
# its own share of the client CPU set, meeting at QuestDB (bench --barrier), then their records merged into
# the whole run's (harness merge) and its report written. docs/scale-out.md.
#
#   scripts/docker-clients.sh N CLIENT_CPUS RESULTS BENCH_ARGS...
#
# RESULTS is the merged record (results/NAME.json); the clients' records and logs go to results/NAME/.
# COMPOSE (the compose command with its -f files, e.g. "docker compose -f compose.yaml") and the variables
# compose.yaml reads come from the environment (the Makefile passes them). The containers are on the
# Compose network as `client` (--use-aliases), where Prometheus finds every one of them (DNS).
set -euo pipefail

clients=$1 cpus=$2 results=$3
shift 3
read -ra shares <<<"$(scripts/docker-check.sh shares "$cpus" "$clients")"
name=$(basename "$results" .json)
folder=results/$name
mkdir -p "$folder"
chown "${CLIENT_UID:-10001}:${CLIENT_GID:-10001}" "$folder" 2>/dev/null || true
run="$name-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
echo "$clients clients, run $run; records and logs in $folder/"

ids=()
cleanup() {
    [ ${#ids[@]} -eq 0 ] || docker rm --force "${ids[@]}" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'echo "interrupted: stopping the clients" >&2; [ ${#ids[@]} -eq 0 ] || docker stop --time 30 "${ids[@]}" >/dev/null; exit 130' INT TERM

build=--build
for ((client = 0; client < clients; client++)); do
    echo "  client $client: group $client of $clients, CPUs ${shares[client]}"
    # shellcheck disable=SC2086 # COMPOSE is a command line
    id=$(CLIENT_CPUS=${shares[client]} $COMPOSE run --detach $build --quiet-build --use-aliases client "$@" \
        --barrier "$run" --interleaved-generation-group-id "$client" --interleaved-generation-groups "$clients" \
        --results "$folder/client-$client.json")
    ids+=("$id")
    build=  # one build serves every client
done

failed=0
for ((client = 0; client < clients; client++)); do
    code=$(docker wait "${ids[client]}")
    docker logs "${ids[client]}" >"$folder/client-$client.log" 2>&1 || true
    if [ "$code" != 0 ]; then
        failed=1
        echo "  client $client exited $code: $(tail -n 1 "$folder/client-$client.log")"
    fi
done

records=()
for ((client = 0; client < clients; client++)); do
    [ ! -f "$folder/client-$client.json" ] || records+=("$folder/client-$client.json")
done
if [ ${#records[@]} -lt "$clients" ]; then
    echo "only ${#records[@]} of $clients clients left a record (logs in $folder/)" >&2
    exit 1
fi
# shellcheck disable=SC2086
$COMPOSE run --rm --no-deps client merge "${records[@]}" --results "$results" --report
exit "$failed"
