#!/usr/bin/env python3
"""The Swarm stack file of `make swarm-bench`, from the Compose model: reads `docker compose config --format
json` of compose.yaml (+ compose.offline.yaml) + compose.swarm.yaml on stdin, writes what `docker stack deploy`
takes on stdout (JSON, which is YAML).

    swarm-stack.py --servers-only                                     < model.json > stack.json
    swarm-stack.py --clients N --folder results/RUN -- bench ARGS...  < model.json > stack.json
    swarm-stack.py --images                                           < model.json > images.txt
    swarm-stack.py --client-build                                     < model.json > "IMAGE BASE"

It drops what a stack refuses or ignores: the project's name and the names Compose gives its networks and
volumes (the stack namespaces its own), and each service's build (the images must be on the nodes already),
cpuset (compose.swarm.yaml sets CPU limits instead), profiles, pull_policy and depends_on (a stack starts
every service at once; the target waits for QuestDB before it adds the clients); a CPU limit becomes the
string a stack wants. --servers-only leaves the
clients out; otherwise the client service runs N replicas of the given harness command, each writing its
record into FOLDER in its container (compose.swarm.yaml's entrypoint adds the replica's group and record file;
the record reaches the user through QuestDB: harness.scaleout.delivery). --images lists each service's image
(``SERVICE IMAGE`` lines), for scripts/docker-swarm.sh to load them into the nodes that run them;
--client-build the client's image and the base it is built on (its PYTHON_IMAGE), for it to tell whether the
image on the engine was built from the inputs at hand.

A file bound into a service (QuestDB's server.conf, Prometheus's configuration) becomes a swarm config: the
manager hands it to whichever node runs the service, where a bind mount would need the file at the same path
on that node. Its name carries a digest of its content, as a swarm's configs cannot change. A bound folder
(Grafana's provisioning, online only) stays a bind mount: its node must hold it at the same path.

No secret is written to the stack file (it is kept with the run's records): the environment entries that hold
one (Grafana's admin password; under AUTH=1, compose.auth.yaml's logins) are left empty, and `docker stack
deploy` fills them from its own environment, which scripts/docker-secrets.sh sets. A secret Compose takes from
an environment variable (``environment: VAR``) a stack takes from a file only: the one ``VAR_FILE`` names in
the environment; its name changes with the file (a digest of its inode, size and time of change, never of its
content), as a swarm's secrets cannot change (8 hex digits: a swarm's names, the stack's prefix included, hold 64
characters at most).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

DROPPED = ("build", "cpuset", "profiles", "pull_policy", "depends_on")
# Environment entries whose values `docker stack deploy` takes from its own environment (null in the stack).
FROM_DEPLOY_ENVIRONMENT = frozenset({"GF_SECURITY_ADMIN_PASSWORD", "QDB_HTTP_USER", "QDB_HTTP_PASSWORD", "QDB_PG_USER",
                                     "QDB_PG_PASSWORD", "QDB_CLIENT_CONF", "PGUSER", "PGPASSWORD"})


def file_secrets(model: dict) -> None:
    """Each secret Compose takes from an environment variable, taken from the file VAR_FILE names instead."""
    renamed = {}
    for name, secret in list((model.get("secrets") or {}).items()):
        secret.pop("name", None)
        variable = secret.pop("environment", None)
        if variable is None:
            continue
        path = os.environ.get(f"{variable}_FILE")
        if not path or not Path(path).is_file():
            sys.exit(f"swarm-stack: secret {name} comes from ${variable}; a stack needs it in a file: set "
                     f"{variable}_FILE to one (scripts/docker-secrets.sh does)")
        secret["file"] = path
        state = Path(path).stat()
        version = hashlib.sha256(f"{state.st_ino}:{state.st_size}:{state.st_mtime_ns}".encode()).hexdigest()[:8]
        renamed[name] = f"{name}_{version}"
        model["secrets"][renamed[name]] = model["secrets"].pop(name)
    for service in model["services"].values():
        for mount in service.get("secrets") or []:
            mount["source"] = renamed.get(mount["source"], mount["source"])


def file_configs(model: dict) -> None:
    """Each file bound into a service, as a swarm config (named by its file and a digest of its content)."""
    configs = model.setdefault("configs", {})
    for service in model["services"].values():
        kept = []
        for volume in service.get("volumes") or []:
            source = Path(volume.get("source") or "")
            if volume.get("type") != "bind" or not source.is_file():
                kept.append(volume)
                continue
            digest = hashlib.sha256(source.read_bytes()).hexdigest()[:8]
            name = f"{source.name.replace('.', '-')}_{digest}"
            configs[name] = {"file": str(source)}
            service.setdefault("configs", []).append({"source": name, "target": volume["target"], "mode": 0o444})
        if kept:
            service["volumes"] = kept
        else:
            service.pop("volumes", None)
    if not configs:
        del model["configs"]


def stack(model: dict, clients: int | None, folder: str | None, command: list[str]) -> dict:
    model.pop("name", None)
    for section in ("networks", "volumes"):
        for definition in (model.get(section) or {}).values():
            definition.pop("name", None)
    file_secrets(model)
    file_configs(model)
    services = model["services"]
    for service in services.values():
        for key in DROPPED:
            service.pop(key, None)
        environment = service.get("environment") or {}
        for key in FROM_DEPLOY_ENVIRONMENT & set(environment):
            environment[key] = None
        for key in [key for key, value in service.items() if value is None]:  # entrypoint: null ...
            del service[key]
        # Compose writes a CPU limit as a number, the stack's schema wants a string.
        for resources in (service.get("deploy", {}).get("resources") or {}).values():
            if "cpus" in resources:
                resources["cpus"] = str(resources["cpus"])
    if clients is None:
        del services["client"]
    else:
        client = services["client"]
        client["command"] = [word.replace("$", "$$") for word in command]  # the stack loader interpolates $
        client["deploy"]["replicas"] = clients
        client["environment"]["CLIENT_RESULTS"] = folder
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers-only", action="store_true")
    parser.add_argument("--images", action="store_true")
    parser.add_argument("--client-build", action="store_true")
    parser.add_argument("--clients", type=int)
    parser.add_argument("--folder")
    parser.add_argument("command", nargs="*")
    options = parser.parse_args()
    model = json.load(sys.stdin)
    if options.images:
        for name, service in model["services"].items():
            print(name, service["image"])
        return
    if options.client_build:
        client = model["services"]["client"]
        print(client["image"], client["build"]["args"]["PYTHON_IMAGE"])
        return
    if options.servers_only == (options.clients is not None) or (options.clients and not options.folder):
        parser.error("give --servers-only, --images, or --clients N --folder DIR -- COMMAND...")
    json.dump(stack(model, None if options.servers_only else options.clients, options.folder, options.command),
              sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
