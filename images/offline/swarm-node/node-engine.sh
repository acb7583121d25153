#!/bin/sh
# A swarm node's Docker engine, in its container (images/offline/swarm-node/Dockerfile): its API on the unix
# socket and on tcp://<the node's address>:2375, the address of the test's own bridge network, where the host
# and the other nodes reach it. Plain TCP without TLS gives root on the node to whoever reaches that address:
# only the host and the other nodes do (the network is the test's own, nothing is published).
set -eu

# Docker mounts a container's cgroup v1 hierarchies read-only; the engine inside makes cgroups for its
# containers, so each hierarchy is mounted again, writable, in the node's own cgroup namespace (the
# controllers a container may not mount are left out). Under cgroup v2 the engine sets up what it needs.
if [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
    mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
    for controller in $(awk 'NR > 1 && $4 == 1 {print $1}' /proc/cgroups); do
        mkdir -p "/sys/fs/cgroup/$controller"
        mount -t cgroup -o "$controller" cgroup "/sys/fs/cgroup/$controller" 2>/dev/null \
            || rmdir "/sys/fs/cgroup/$controller"
    done
    mkdir -p /sys/fs/cgroup/systemd
    mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
fi

address=$(hostname -i | cut -d ' ' -f 1)
# --tls=false: said, so the engine does not wait out its warning about a TCP socket without TLS.
exec dockerd --tls=false --host unix:///var/run/docker.sock --host "tcp://$address:2375" "$@"
