#!/usr/bin/env bash
# `make swarm-bench CLIENTS=N` and `make swarm-down`: the stack of compose.yaml as a Docker Swarm stack
# (compose.swarm.yaml), N client replicas meeting at QuestDB (bench --barrier), replica k sending TSBS's
# interleaved group k-1 of N (its task slot), their records merged into the whole run's. docs/scale-out.md.
#
#   scripts/docker-swarm.sh bench N RESULTS BENCH_ARGS...    deploy, run the clients, merge
#   scripts/docker-swarm.sh down                             remove the stack; leave the swarm if we made it
#
# RESULTS is the merged record (results/NAME.json); the clients' records and logs, and the stack file, go to
# results/NAME/. From the environment (the Makefile passes them): COMPOSE (the compose command with its -f
# files, compose.swarm.yaml last), STACK (the stack's name), SWARM_TIMEOUT (seconds the clients may take),
# and the variables compose.yaml and compose.swarm.yaml read.
#
# With no swarm, `bench` makes a one-node swarm (advertised on 127.0.0.1) and labels its node for both the
# servers and the clients; .cache/swarm-made records that (the node's id, and whether Docker's
# docker_gwbridge network was there before), so that `down` leaves that swarm, and only that one. A swarm
# that was here before is never left, and its nodes must carry the labels already (the error says how).
set -euo pipefail

STACK=${STACK:-tsbs-pandas-questdb-swarm}
MARKER=.cache/swarm-made
SERVER_TIMEOUT=180   # QuestDB healthy, as the Compose targets' --wait-timeout
FAILED_GRACE=30      # after a client fails, the others' time to end on their own (they read its notice)
POLL=2

die() { echo "swarm: $*" >&2; exit 1; }
swarm_state() { docker info --format '{{.Swarm.LocalNodeState}}'; }
node_id() { docker info --format '{{.Swarm.NodeID}}'; }

# --- the swarm: made here (and remembered) or the user's --------------------------------------------------
join_or_make_swarm() {
    local state
    state=$(swarm_state)
    if [ "$state" = inactive ]; then
        local bridge=0
        docker network inspect docker_gwbridge >/dev/null 2>&1 && bridge=1
        docker swarm init --advertise-addr 127.0.0.1 >/dev/null || die "docker swarm init failed"
        mkdir -p "$(dirname "$MARKER")"
        printf 'node=%s\ngwbridge_was_there=%s\n' "$(node_id)" "$bridge" >"$MARKER"
        docker node update --label-add tsbs.questdb=true --label-add tsbs.client=true "$(node_id)" >/dev/null
        echo "made a one-node swarm (make swarm-down leaves it); node labelled tsbs.questdb and tsbs.client"
        return
    fi
    [ "$state" = active ] || die "this engine's swarm is $state: fix it first (docker info)"
    [ "$(docker info --format '{{.Swarm.ControlAvailable}}')" = true ] \
        || die "this node is a swarm worker: run make swarm-bench on a manager"
    local labels
    labels=$(docker node ls --quiet | xargs docker node inspect --format '{{json .Spec.Labels}}')
    for label in tsbs.questdb tsbs.client; do
        grep -q "\"$label\":\"true\"" <<<"$labels" || die "no node of this swarm is labelled $label=true: \
docker node update --label-add $label=true NODE (docs/scale-out.md)"
    done
}

made_here() {  # whether this engine's swarm is the one `bench` made
    [ -f "$MARKER" ] && [ "$(swarm_state)" = active ] && grep -qx "node=$(node_id)" "$MARKER"
}

# --- tasks -------------------------------------------------------------------------------------------------
tasks() {  # tasks SERVICE [FILTER]: "slot<TAB>id<TAB>node<TAB>state<TAB>error" of each of its tasks
    docker service ps "$1" ${2:+--filter "$2"} --no-trunc \
        --format '{{.Name}}\t{{.ID}}\t{{.Node}}\t{{.CurrentState}}\t{{.Error}}' 2>/dev/null | sed 's/^[^[:space:]]*\.//'
}

wait_for_questdb() {
    local waited=0 line
    while :; do
        line=$(tasks "${STACK}_questdb" desired-state=running | head -n 1)
        case $(cut -f4 <<<"$line") in
            Running*) return ;;
            Failed* | Rejected*) die "QuestDB's task ended: $(cut -f4,5 <<<"$line")" ;;
        esac
        [ "$waited" -lt "$SERVER_TIMEOUT" ] || die "QuestDB was not healthy within ${SERVER_TIMEOUT}s: \
${line:-no task} (docker service ps ${STACK}_questdb)"
        sleep "$POLL"
        waited=$((waited + POLL))
    done
}

deploy() {  # deploy FILE: the stack as FILE says; its notes (ignored options, --detach) only if it fails
    local said
    # --resolve-image never: the images are on the nodes already (built here, or loaded; docs/scale-out.md).
    said=$(docker stack deploy --resolve-image never -c "$1" "$STACK" 2>&1) \
        || die "docker stack deploy -c $1 failed: $(tail -n 1 <<<"$said")"
}

save_logs() {  # each listed client task's log, beside its record; and the node each replica runs on
    local slot id node
    while IFS=$'\t' read -r slot id node _; do
        [ -n "$slot" ] || continue
        ran_on[$slot]=$node
        docker service logs --raw --no-trunc "$id" >"$folder/client-$((slot - 1)).log" 2>&1 || true
    done < <(tasks "${STACK}_client")
}

stop_clients() {  # SIGTERM: each client ends its run and records it; swarm then deletes the tasks (logs first)
    save_logs
    docker service scale --detach "${STACK}_client=0" >/dev/null 2>&1 || true
    stopped=1
}

# --- bench -----------------------------------------------------------------------------------------------
bench() {
    local clients=$1 results=$2
    shift 2
    local name folder run
    name=$(basename "$results" .json)
    folder=results/$name
    run="$name-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"

    join_or_make_swarm
    mkdir -p "$folder"
    chown "${CLIENT_UID:-10001}:${CLIENT_GID:-10001}" "$folder" 2>/dev/null || true
    # shellcheck disable=SC2086 # COMPOSE is a command line
    $COMPOSE --profile client build --quiet client >/dev/null || die "building the client image failed"
    # The model holds the secrets Compose resolves from this environment (scripts/docker-secrets.sh's): it stays
    # in this process. The stack files, kept beside the records, leave them to `docker stack deploy`, which takes
    # them from this environment too (scripts/swarm-stack.py); Grafana's under the name its service reads.
    local model
    # shellcheck disable=SC2086
    model=$($COMPOSE --profile client config --format json) || die "docker compose config failed"
    printf '%s' "$model" | scripts/swarm-stack.py --servers-only >"$folder/servers.json"
    printf '%s' "$model" | scripts/swarm-stack.py --clients "$clients" --folder "$folder" -- "$@" --barrier "$run" \
        --interleaved-generation-groups "$clients" >"$folder/stack.json"
    export GF_SECURITY_ADMIN_PASSWORD=${GRAFANA_ADMIN_PASSWORD:-}

    # The servers first, healthy, then the clients: a stack starts every service at once, and a client
    # that finds no QuestDB fails. A client service left by an interrupted run goes first.
    docker service rm "${STACK}_client" >/dev/null 2>&1 || true
    deploy "$folder/servers.json"
    wait_for_questdb
    echo "$clients clients, run $run; records and logs in $folder/"
    local started=$SECONDS failed_at='' interrupted=0 stopped=0 slot id node state error listed ended
    declare -A ran_on=() said=()  # replica (task slot) -> its node; the replicas whose end was printed
    trap 'echo "interrupted: stopping the clients" >&2; stop_clients; interrupted=1' INT TERM
    deploy "$folder/stack.json"

    while :; do
        listed=0 ended=0
        while IFS=$'\t' read -r slot id node state error; do
            [ -n "$slot" ] || continue
            listed=$((listed + 1))
            ran_on[$slot]=$node
            case $state in
                Complete* | Failed* | Rejected* | Shutdown* | Orphaned*) ended=$((ended + 1)) ;;
                *) continue ;;
            esac
            [ -z "${said[$slot]:-}" ] || continue
            said[$slot]=1
            case $state in
                Complete*) echo "  client $((slot - 1)) (replica $slot, node $node): ${state%% *}" ;;
                *)
                    echo "  client $((slot - 1)) (replica $slot, node $node): ${state%% *}${error:+ ($error)}:" \
                        "$(docker service logs --raw --no-trunc "$id" 2>&1 | tail -n 1)"
                    failed_at=${failed_at:-$SECONDS}
                    ;;
            esac
        done < <(tasks "${STACK}_client")
        # Done when every replica has ended, or, once stopped, when swarm has deleted their tasks.
        if [ "$ended" -ge "$clients" ] || { [ "$stopped" = 1 ] && [ "$listed" = 0 ]; }; then
            break
        fi
        if [ "$stopped" = 0 ] && [ -n "$failed_at" ] && [ $((SECONDS - failed_at)) -ge "$FAILED_GRACE" ]; then
            echo "a client failed ${FAILED_GRACE}s ago: stopping the others" >&2
            stop_clients
        elif [ "$stopped" = 0 ] && [ $((SECONDS - started)) -ge "${SWARM_TIMEOUT:-3600}" ]; then
            echo "the clients did not end within ${SWARM_TIMEOUT:-3600}s (SWARM_TIMEOUT): stopping them" >&2
            stop_clients
        fi
        sleep "$POLL" || true  # a signal ends the sleep; the loop goes on to collect what the clients left
    done
    trap - INT TERM
    [ "$stopped" = 1 ] || save_logs

    local failed=$stopped records=()
    [ "$(tasks "${STACK}_client" | grep -vc $'\tComplete')" = 0 ] || failed=1
    local image
    image=$(docker service inspect --format '{{.Spec.TaskTemplate.ContainerSpec.Image}}' "${STACK}_client")
    docker service rm "${STACK}_client" >/dev/null
    local here missing=() record
    here=$(docker info --format '{{.Name}}')
    for ((client = 0; client < clients; client++)); do
        record=$folder/client-$client.json
        if [ -f "$record" ]; then
            records+=("$record")
        elif [ "${ran_on[$((client + 1))]:-$here}" = "$here" ]; then
            missing+=("client $client left none (its log: $folder/client-$client.log)")
        else  # each node's replicas write to that node's results/ (docs/scale-out.md)
            missing+=("client $client ran on node ${ran_on[$((client + 1))]}: copy its $record here, then harness merge")
        fi
    done
    [ ${#missing[@]} = 0 ] || die "no merged record: $(printf '%s; ' "${missing[@]}" | sed 's/; $//')"
    docker run --rm --network none --user "${CLIENT_UID:-10001}:${CLIENT_GID:-10001}" \
        -v "$PWD/results:/app/results" "$image" merge "${records[@]}" --results "$results" --report \
        || failed=1
    echo "The stack $STACK stays up (QuestDB's data in its volume): make swarm-down removes it"
    [ "$interrupted" = 0 ] || exit 130
    exit "$failed"
}

# --- down --------------------------------------------------------------------------------------------------
down() {
    if [ "$(swarm_state)" = active ] && docker stack ls --format '{{.Name}}' | grep -qx "$STACK"; then
        docker stack rm "$STACK" >/dev/null
        local waited=0
        # Stack removal is asynchronous: wait for its containers and network to go (QuestDB closes its tables).
        while [ -n "$(docker ps --all --quiet --filter "label=com.docker.stack.namespace=$STACK")$(docker network ls \
            --quiet --filter "label=com.docker.stack.namespace=$STACK")" ]; do
            [ "$waited" -lt 120 ] || die "the stack $STACK's containers did not go within 120s (docker ps)"
            sleep "$POLL"
            waited=$((waited + POLL))
        done
        echo "removed the stack $STACK (its data volumes stay: docker volume ls)"
    else
        echo "no stack $STACK here"
    fi
    [ -f "$MARKER" ] || return 0
    if made_here; then
        local others
        others=$(docker service ls --format '{{.Name}}')
        if [ -n "$others" ]; then
            echo "the swarm make swarm-bench made now runs other services ($others): left as it is" >&2
            return
        fi
        docker swarm leave --force >/dev/null
        echo "left the one-node swarm make swarm-bench made"
    fi
    # docker_gwbridge is made by the first swarm and outlives it: it goes if that swarm was ours.
    if grep -qx gwbridge_was_there=0 "$MARKER" && [ "$(swarm_state)" = inactive ]; then
        docker network rm docker_gwbridge >/dev/null 2>&1 || true
    fi
    rm -f "$MARKER"
}

case ${1:-} in
    bench) shift; bench "$@" ;;
    down) down ;;
    *) echo "usage: $0 bench N RESULTS BENCH_ARGS... | down" >&2; exit 2 ;;
esac
