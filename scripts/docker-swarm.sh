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
# SWARM_ENGINES (the Docker engines of the swarm's other nodes, as `docker -H` takes them: each gets the
# stack's images its node's labels call for, where it lacks them), and the variables compose.yaml and
# compose.swarm.yaml read. DOCKER_HOST may name the manager's engine on another machine: nothing here assumes
# that the engine shares this machine's files.
#
# The replicas' records come back through QuestDB, not through a folder: each replica delivers its record
# there when its run ends, and a one-off container of the client image on the stack's network gathers them
# (`harness merge --from-server`), merges them and writes the merged record and report, which are then copied
# out of it (`docker cp`) into results/ here. A replica whose node goes down is named at once, its client is
# told failed at the meeting (so the others stop waiting for it), and the run ends; QuestDB's node going down
# ends it too, naming that node (docs/scale-out.md).
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
STOP_GRACE=30        # after the clients are stopped, their time to record their run and go
GATHER_WAIT=60       # a record not delivered this long after the gathering starts is named missing
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

node_state() {  # node_state NODE: ready, down, unknown ... (docker node ls's STATUS)
    docker node inspect --format '{{.Status.State}}' "$1" 2>/dev/null || echo unknown
}

lacks_image() {  # lacks_image NODE ERROR: the one line for a task a node could not start for want of its image
    local image=${2#*No such image: }
    echo "node $1 lacks the image ${image%% *}: load it there (docker save ${image%% *} | docker -H <its engine> load)," \
        "or name its engine in SWARM_ENGINES (docs/scale-out.md)"
}

wait_for_questdb() {
    local waited=0 line node error
    while :; do
        line=$(tasks "${STACK}_questdb" desired-state=running | head -n 1)
        node=$(cut -f3 <<<"$line") error=$(cut -f5 <<<"$line")
        case $(cut -f4 <<<"$line") in
            Running*) return ;;
            Failed* | Rejected*)
                [[ $error != *"No such image"* ]] || die "QuestDB's task could not start: $(lacks_image "$node" "$error")"
                die "QuestDB's task on node $node ended: $(cut -f4,5 <<<"$line")" ;;
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

save_logs() {  # each listed client task's log, beside its record (a lost node's cannot be read)
    local slot id node
    while IFS=$'\t' read -r slot id node _; do
        [ -n "$slot" ] || continue
        if [ -n "${lost[$((slot - 1))]:-}" ]; then
            echo "no log: ${lost[$((slot - 1))]}" >"$folder/client-$((slot - 1)).log"
            continue
        fi
        # Through the manager, from the replica's node; bounded, as a node may go while it answers.
        timeout 30 docker service logs --raw --no-trunc "$id" >"$folder/client-$((slot - 1)).log" 2>&1 || true
    done < <(tasks "${STACK}_client")
}

stop_clients() {  # SIGTERM: each client ends its run and records it; swarm then deletes the tasks (logs first)
    save_logs
    docker service scale --detach "${STACK}_client=0" >/dev/null 2>&1 || true
    stopped=$SECONDS
}

load_images() {  # load_images IMAGES: into each engine of SWARM_ENGINES, the images its node's labels call for
    local images=$1 engine node hostname labels service image label here there
    for engine in ${SWARM_ENGINES:-}; do
        node=$(docker -H "$engine" info --format '{{.Swarm.NodeID}}' 2>/dev/null) \
            || die "the Docker engine $engine (SWARM_ENGINES) does not answer"
        hostname=$(docker node inspect --format '{{.Description.Hostname}}' "${node:-none}" 2>/dev/null) \
            || die "the Docker engine $engine (SWARM_ENGINES) is no node of this swarm"
        labels=$(docker node inspect --format '{{json .Spec.Labels}}' "$node")
        while read -r service image; do
            label=tsbs.questdb
            [ "$service" != client ] || label=tsbs.client
            grep -q "\"$label\":\"true\"" <<<"$labels" || continue
            # An image the manager does not hold (a pinned upstream one) each node pulls by its tag.
            here=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null) || continue
            there=$(docker -H "$engine" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
            [ "$here" != "$there" ] || continue
            echo "loading $image into node $hostname ($engine)"
            docker save "$image" | docker -H "$engine" load --quiet >/dev/null \
                || die "loading $image into node $hostname ($engine) failed"
        done <<<"$images"
    done
}

CLIENT_INPUTS_LABEL=tsbs-pandas-questdb.inputs

client_image() {  # client_image MODEL: the client image built on this engine, unless it holds one built from
    # these very inputs (MODEL: the Compose model, `config --format json`)
    local image base inputs
    read -r image base < <(printf '%s' "$1" | scripts/swarm-stack.py --client-build)
    # Its Dockerfile, the files .dockerignore lets into its context (names, modes and bytes, not their times)
    # and its base's id: an engine that was handed the image (docker load) need not build it again.
    inputs=$({ tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --exclude=__pycache__ -cf - \
        images/client/Dockerfile pyproject.toml requirements.lock harness \
        && docker image inspect --format '{{.Id}}' "$base"; } | sha256sum | cut -c 1-16)
    if [ "$(docker image inspect --format "{{index .Config.Labels \"$CLIENT_INPUTS_LABEL\"}}" "$image" 2>/dev/null)" \
        = "$inputs" ]; then
        echo "the client image $image is up to date (built from these inputs)"
        return
    fi
    # shellcheck disable=SC2086
    CLIENT_INPUTS=$inputs $COMPOSE --profile client build --quiet client >/dev/null \
        || die "building the client image failed"
}

gather() {  # gather [--lost CLIENT:REASON ...]: the replicas' records from QuestDB, merged, in a container of the run's
    # The client image, on the stack's network, logged in as the clients are (QDB_CLIENT_CONF, from this
    # environment: never a command line); it waits GATHER_WAIT seconds at most for records not yet delivered.
    docker run --name "$gatherer" --network "${STACK}_default" --env QDB_CLIENT_CONF --env HARNESS_HTTP_CONF \
        "$image" merge --from-server "$run" --clients "$clients" --host questdb --wait "$GATHER_WAIT" \
        --results "$results" --report "$@"
}

# --- bench -----------------------------------------------------------------------------------------------
bench() {
    local clients=$1 results=$2
    shift 2
    local name folder run
    name=$(basename "$results" .json)
    folder=results/$name
    results=results/$(basename "$results")  # ./results/NAME.json too: a path in the gathering's container
    run="$name-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"

    join_or_make_swarm
    mkdir -p "$folder"
    # The model holds the secrets Compose resolves from this environment (scripts/docker-secrets.sh's): it stays
    # in this process. The stack files, kept beside the records, leave them to `docker stack deploy`, which takes
    # them from this environment too (scripts/swarm-stack.py); Grafana's under the name its service reads.
    local model images
    # shellcheck disable=SC2086 # COMPOSE is a command line
    model=$($COMPOSE --profile client config --format json) || die "docker compose config failed"
    client_image "$model"
    printf '%s' "$model" | scripts/swarm-stack.py --servers-only >"$folder/servers.json"
    printf '%s' "$model" | scripts/swarm-stack.py --clients "$clients" --folder "$folder" -- "$@" --barrier "$run" \
        --interleaved-generation-groups "$clients" >"$folder/stack.json"
    images=$(printf '%s' "$model" | scripts/swarm-stack.py --images)
    export GF_SECURITY_ADMIN_PASSWORD=${GRAFANA_ADMIN_PASSWORD:-}
    load_images "$images"

    # The servers first, healthy, then the clients: a stack starts every service at once, and a client
    # that finds no QuestDB fails. A client service left by an interrupted run goes first.
    docker service rm "${STACK}_client" >/dev/null 2>&1 || true
    deploy "$folder/servers.json"
    wait_for_questdb
    local image gatherer="${STACK}_gather_$run"
    image=$(sed -n 's/^client //p' <<<"$images")
    echo "$clients clients, run $run; records and logs in $folder/"
    local started=$SECONDS failed_at='' interrupted=0 stopped='' slot id node state error listed ended gathering=''
    local questdb_lost='' questdb_node line silent=0
    declare -A said=() lost=() states=()  # replicas whose end was printed; lost clients (-> why); node states
    trap 'echo "interrupted: stopping the clients" >&2; stop_clients; interrupted=1' INT TERM
    deploy "$folder/stack.json"

    while :; do
        listed=0 ended=0 states=()
        while IFS=$'\t' read -r slot id node state error; do
            [ -n "$slot" ] || continue
            listed=$((listed + 1))
            case $state in
                Complete* | Failed* | Rejected* | Shutdown* | Orphaned*) ended=$((ended + 1)) ;;
                *)
                    # A task on a node that is down stays "running" for Swarm; the node's state tells.
                    [ -n "$node" ] || continue
                    states[$node]=${states[$node]:-$(node_state "$node")}
                    [ "${states[$node]}" = down ] || continue
                    ended=$((ended + 1))
                    [ -z "${lost[$((slot - 1))]:-}" ] || continue
                    lost[$((slot - 1))]="its node $node is down (replica $slot)"
                    state="lost, node $node is down"
                    ;;
            esac
            [ -z "${said[$slot]:-}" ] || continue
            said[$slot]=1
            case $state in
                Complete*) echo "  client $((slot - 1)) (replica $slot, node $node): ${state%% *}" ;;
                lost*) echo "  client $((slot - 1)) (replica $slot, node $node): $state" >&2 ;;
                *)
                    if [[ $error == *"No such image"* ]]; then
                        echo "  client $((slot - 1)) (replica $slot, node $node): ${state%% *}: $(lacks_image "$node" "$error")"
                    else
                        echo "  client $((slot - 1)) (replica $slot, node $node): ${state%% *}${error:+ ($error)}:" \
                            "$(timeout 30 docker service logs --raw --no-trunc "$id" 2>&1 | tail -n 1)"
                    fi
                    ;;
            esac
            case $state in Complete*) ;; *) failed_at=${failed_at:-$SECONDS} ;; esac
        done < <(tasks "${STACK}_client")
        # A lost client cannot say `failed` at the meeting: the gathering says it for it, at once, so that the
        # others stop waiting for it, then waits for their records (in the background, while this loop goes on).
        if [ ${#lost[@]} -gt 0 ] && [ -z "$gathering" ]; then
            local told=()
            for client in "${!lost[@]}"; do told+=(--lost "$client:${lost[$client]}"); done
            gather "${told[@]}" &
            gathering=$!
        fi
        # QuestDB's task, and its node: the clients send there, meet there and deliver their records there.
        if [ -z "$questdb_lost" ]; then
            # The manager itself must answer: without it there is no swarm to ask (bounded, as it may be gone).
            if ! timeout 20 docker service ps "${STACK}_questdb" --quiet >/dev/null 2>&1; then
                silent=$((silent + 1))
                [ "$silent" -lt 3 ] || die "the swarm's manager does not answer (docker service ps failed 3 times):" \
                    "its clients and QuestDB are left as they are"
            else
                silent=0
            fi
            line=$(tasks "${STACK}_questdb" desired-state=running | head -n 1)
            questdb_node=$(cut -f3 <<<"$line")
            if [ "$silent" != 0 ]; then
                :
            elif [ -n "$questdb_node" ] && [ "${states[$questdb_node]:-$(node_state "$questdb_node")}" = down ]; then
                questdb_lost="its node $questdb_node is down"
            elif [[ $(cut -f4 <<<"$line") != Running* ]]; then
                questdb_lost="its task is ${line:+$(cut -f4,5 <<<"$line")}${line:-gone}"
            fi
            if [ -n "$questdb_lost" ]; then
                echo "QuestDB lost: $questdb_lost; stopping the clients" >&2
                failed_at=${failed_at:-$SECONDS}
                [ -n "$stopped" ] || stop_clients
            fi
        fi
        # Done when every replica has ended (or was lost), or, once stopped, when swarm has deleted the tasks it
        # can reach, or when they have had their time.
        if [ "$ended" -ge "$clients" ] || { [ -n "$stopped" ] && [ "$listed" -le "${#lost[@]}" ]; }; then
            break
        fi
        if [ -n "$stopped" ] && [ $((SECONDS - stopped)) -ge "$STOP_GRACE" ]; then
            echo "the clients did not end within ${STOP_GRACE}s of being stopped: removing them" >&2
            break
        fi
        if [ -z "$stopped" ] && [ -n "$failed_at" ] && [ $((SECONDS - failed_at)) -ge "$FAILED_GRACE" ]; then
            echo "a client failed ${FAILED_GRACE}s ago: stopping the others" >&2
            stop_clients
        elif [ -z "$stopped" ] && [ $((SECONDS - started)) -ge "${SWARM_TIMEOUT:-3600}" ]; then
            echo "the clients did not end within ${SWARM_TIMEOUT:-3600}s (SWARM_TIMEOUT): stopping them" >&2
            stop_clients
        fi
        sleep "$POLL" || true  # a signal ends the sleep; the loop goes on to collect what the clients left
    done
    trap - INT TERM
    [ -n "$stopped" ] || save_logs

    local failed=0
    [ "$(tasks "${STACK}_client" | grep -vc $'\tComplete')" = 0 ] || failed=1
    docker service rm "${STACK}_client" >/dev/null
    if [ -n "$questdb_lost" ]; then
        [ -z "$gathering" ] || wait "$gathering" || true
        docker rm --force "$gatherer" >/dev/null 2>&1 || true
        die "no merged record: the replicas deliver their records to QuestDB, and QuestDB was lost ($questdb_lost);" \
            "their logs are in $folder/"
    fi
    if [ -n "$gathering" ]; then
        wait "$gathering" || failed=1
    else
        gather || failed=1
    fi
    # What the gathering wrote in its container (the merged record, its report, the clients' records) comes
    # here through the engine's API, as the files of results/ the user owns.
    local made
    for made in "$(basename "$results")" "$name.html" "$name"; do
        docker cp "$gatherer:/app/results/$made" - 2>/dev/null | tar -x --no-same-owner -C results 2>/dev/null || true
    done
    docker rm "$gatherer" >/dev/null
    [ -f "$results" ] || failed=1
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
