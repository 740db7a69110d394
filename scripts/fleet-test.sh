#!/usr/bin/env bash
# The Ansible collection (integrations/ansible) driven by real Ansible over real SSH: an sshd of
# our own on four loopback addresses (127.0.0.2-.5, one port, a throwaway host key and user
# key), one inventory host per address, each with its own venv made by pip from the test world
# (docs/test-world.md): seed-a and seed-b seed-broken, healthy, and drift (seed-broken, then
# repaired by hand with pip after check.yml reviewed its plan, so that the reviewed plan no
# longer applies: venvfix exit 7). Playbooks: integrations/ansible/tests/fleet/*.yml; what each
# run must show: fleet_check.py. Everything lives in one temp dir, removed on exit.
#
# Usage: scripts/fleet-test.sh [VENVFIX_BINARY]   (default build/asan/venvfix)
# Exit 0 passed, 1 failed, 77 skipped (not root, or ansible/sshd/unshare missing: said why).
# $VENVFIX_WORLD_CACHE reuses a built test world (scenario templates included).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venvfix=$(realpath "${1:-$repo/build/asan/venvfix}")
fleet="$repo/integrations/ansible/tests/fleet"
started=$(date +%s)

skip() { echo "fleet-test: skipped: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (sshd with its own config, root logins, the hermetic view's mount namespace)"
for tool in ansible-playbook ssh ssh-keygen unshare python3; do
  command -v "$tool" >/dev/null || skip "$tool is missing (scripts/setup.sh installs Debian's ansible and openssh-server)"
done
sshd=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$sshd" ] || skip "sshd is missing (scripts/setup.sh installs openssh-server)"
[ -x "$venvfix" ] || { echo "fleet-test: no venvfix binary at $venvfix" >&2; exit 1; }
remote_python=/usr/bin/python3  # the managed hosts' interpreter for Ansible's modules
[ -x "$remote_python" ] || skip "$remote_python is missing"

work=$(mktemp -d "${TMPDIR:-/tmp}/venvfix-fleet.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "fleet-test: [$(($(date +%s) - started)) s] $*" >&2; }

# -- the test world: wheels, index, pip-made venvs ------------------------------------------
world=${VENVFIX_WORLD_CACHE:-$work/world}
python3 "$repo/tests/world/world.py" build --out "$world" >/dev/null
cache="$world/hermetic/ld.so.cache"
hosts=(seed-a seed-b healthy drift)
declare -A address=([seed-a]=127.0.0.2 [seed-b]=127.0.0.3 [healthy]=127.0.0.4 [drift]=127.0.0.5)
declare -A scenario=([seed-a]=seed [seed-b]=seed [healthy]=healthy [drift]=seed)
for host in "${hosts[@]}"; do
  mkdir -p "$work/hosts/$host"
  python3 "$repo/tests/world/world.py" scenario "${scenario[$host]}" --world "$world" \
    --out "$work/hosts/$host/venv" >/dev/null
done
log "world and venvs ready"

python3 "$repo/tests/world/index_server.py" --root "$world/index" --port 0 >"$work/index.port" 2>"$work/index.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/index.port" ] && break; sleep 0.1; done
index_url="http://127.0.0.1:$(head -1 "$work/index.port")/simple"

# -- sshd: our own config, keys and port on 127.0.0.2-.5 ------------------------------------
ssh_dir="$work/ssh"
mkdir -m 700 "$ssh_dir"
ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/user_key"
cp "$ssh_dir/user_key.pub" "$ssh_dir/authorized_keys"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0)); print(s.getsockname()[1])')
{
  for host in "${hosts[@]}"; do echo "ListenAddress ${address[$host]}:$port"; done
  cat <<CONF
HostKey $ssh_dir/host_key
PidFile $ssh_dir/sshd.pid
AuthorizedKeysFile $ssh_dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 50:30:100
Subsystem sftp internal-sftp
LogLevel ERROR
CONF
} >"$ssh_dir/sshd_config"
for host in "${hosts[@]}"; do
  echo "[${address[$host]}]:$port $(cut -d' ' -f1,2 "$ssh_dir/host_key.pub")"
done >"$ssh_dir/known_hosts"
mkdir -p /run/sshd  # sshd's privilege separation directory (the package's service makes it)
"$sshd" -D -e -f "$ssh_dir/sshd_config" 2>"$ssh_dir/sshd.log" &
pids+=($!)
ssh_opts=(-F /dev/null -i "$ssh_dir/user_key" -o IdentitiesOnly=yes -o BatchMode=yes
  -o UserKnownHostsFile="$ssh_dir/known_hosts" -o StrictHostKeyChecking=yes -o ControlMaster=no -p "$port")
for _ in $(seq 100); do
  ssh "${ssh_opts[@]}" root@127.0.0.5 true 2>/dev/null && break
  sleep 0.1
done
for host in "${hosts[@]}"; do
  ssh "${ssh_opts[@]}" "root@${address[$host]}" true || { echo "fleet-test: sshd did not answer on ${address[$host]}:$port" >&2; cat "$ssh_dir/sshd.log" >&2; exit 1; }
done
log "sshd on 127.0.0.2-.5:$port"

# -- Ansible: the collection, an inventory, a config, all under $work -----------------------
mkdir -p "$work/collections/ansible_collections/venvfix" "$work/ansible/tmp" "$work/ansible/remote"
ln -s "$repo/integrations/ansible" "$work/collections/ansible_collections/venvfix/venvfix"
{
  echo "all:"
  echo "  children:"
  echo "    fleet:"
  echo "      hosts:"
  for host in "${hosts[@]}"; do
    cat <<HOST
        $host:
          ansible_host: ${address[$host]}
          venv: $work/hosts/$host/venv
          venvfix_plan_file: $work/hosts/$host/plan.json
          venvfix_cache_dir: $work/hosts/$host/cache
HOST
  done
  cat <<VARS
  vars:
    ansible_port: $port
    ansible_user: root
    ansible_ssh_private_key_file: $ssh_dir/user_key
    ansible_ssh_common_args: -F /dev/null -o IdentitiesOnly=yes -o UserKnownHostsFile=$ssh_dir/known_hosts -o StrictHostKeyChecking=yes
    ansible_python_interpreter: $remote_python
    ansible_remote_tmp: $work/ansible/remote
    venvfix_path: $venvfix
    venvfix_ld_cache: $cache
    venvfix_index_url: $index_url
VARS
} >"$work/inventory.yml"
cat >"$work/ansible.cfg" <<CFG
[defaults]
inventory = $work/inventory.yml
collections_path = $work/collections
forks = 4
host_key_checking = True
stdout_callback = json
local_tmp = $work/ansible/tmp
[ssh_connection]
pipelining = True
# no ControlPersist: a persisting master connection would outlive the test
ssh_args = -o ControlMaster=no
CFG
export ANSIBLE_CONFIG="$work/ansible.cfg" ANSIBLE_HOME="$work/ansible" ANSIBLE_NOCOLOR=1
export ANSIBLE_SSH_CONTROL_PATH_DIR="$work/ansible/cp"

# playbook STEP PLAYBOOK [ansible-playbook options...]: runs it, keeps its JSON, checks it.
playbook() {
  local step=$1 book=$2
  shift 2
  local rc=0
  ansible-playbook "$fleet/$book" "$@" </dev/null >"$work/$step.json" 2>"$work/$step.err" || rc=$?
  log "$step: ansible-playbook $book $* exited $rc"
  if ! python3 "$fleet/fleet_check.py" "$step" "$work/$step.json" --snapshots "$work/snapshots.json"; then
    sed -n '1,40p' "$work/$step.err" >&2
    python3 -m json.tool "$work/$step.json" | head -200 >&2 || cat "$work/$step.json" >&2
    exit 1
  fi
}

# The venv's files (path, size, mtime, mode), but venvfix's own lock file and hash cache, which
# plan, doctor and a refused apply create or update (its journal and snapshots do count).
# Directories count by name and mode only: a rollback moves files out and back in, which
# changes a directory's mtime but not what it holds.
listing() {
  (cd "$1" && find . ! -path ./.venvfix/lock ! -path ./.venvfix/hash-cache-v1 \
    \( \( -type d -printf '%P/ %m\n' \) -o -printf '%P %s %T@ %m\n' \) | LC_ALL=C sort)
}
fingerprint() { listing "$1" | sha256sum | cut -d' ' -f1; }
fingerprints() { for host in "${hosts[@]}"; do echo "$host $(fingerprint "$work/hosts/$host/venv")"; done; }
imports_torch() {
  "$repo/tests/world/hermetic_run.sh" "$cache" -- "$1/bin/python" -c 'import torch' >/dev/null 2>&1
}
expect_imports() {  # expect_imports yes|no HOST...
  local want=$1 host
  shift
  for host in "$@"; do
    if imports_torch "$work/hosts/$host/venv"; then got=yes; else got=no; fi
    [ "$got" = "$want" ] || { echo "fleet-test: import torch on $host: expected $want, got $got" >&2; exit 1; }
  done
}

expect_imports no seed-a seed-b drift
expect_imports yes healthy

playbook info info.yml
before=$(fingerprints)
playbook check check.yml --check --diff
after=$(fingerprints)
[ "$before" = "$after" ] || { echo "fleet-test: check mode changed a venv:" >&2; diff <(echo "$before") <(echo "$after") >&2; exit 1; }
for host in "${hosts[@]}"; do
  [ -s "$work/hosts/$host/plan.json" ] || { echo "fleet-test: no reviewed plan for $host" >&2; exit 1; }
done

# The drift: someone repairs the drift host by hand after the review.
env PIP_CONFIG_FILE=/dev/null PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
  "$work/hosts/drift/venv/bin/python" -m pip install -q --force-reinstall --no-deps \
  --index-url "$index_url" nvidia-cudnn-cu12==9.10.2.21 >"$work/pip.log" 2>&1
drifted=$(fingerprint "$work/hosts/drift/venv")
listing "$work/hosts/drift/venv" >"$work/drift.listing"
healthy_before=$(fingerprint "$work/hosts/healthy/venv")

playbook apply apply.yml
expect_imports yes seed-a seed-b healthy drift
[ "$(fingerprint "$work/hosts/drift/venv")" = "$drifted" ] || {
  echo "fleet-test: the failed apply changed the drift host's venv:" >&2
  diff "$work/drift.listing" <(listing "$work/hosts/drift/venv") >&2
  exit 1
}
[ "$(fingerprint "$work/hosts/healthy/venv")" = "$healthy_before" ] || { echo "fleet-test: apply changed the healthy venv" >&2; exit 1; }

# The same review and apply again: nothing to do anywhere.
before=$(fingerprints)
playbook again-check check.yml --check --diff
playbook again-apply apply.yml
[ "$before" = "$(fingerprints)" ] || { echo "fleet-test: a second run changed a venv" >&2; exit 1; }

before=$(fingerprints)
playbook rollback-check rollback.yml --check --limit seed-a,seed-b -e "@$work/snapshots.json"
[ "$before" = "$(fingerprints)" ] || { echo "fleet-test: a rollback in check mode changed a venv" >&2; exit 1; }
playbook rollback rollback.yml --limit seed-a,seed-b -e "@$work/snapshots.json"
expect_imports no seed-a seed-b

# Failures: an index that does not answer (exit 4, naming the URL), a verify command that
# fails (exit 5, rolled back), a venv another process holds the lock of (exit 6). No venv changes.
# (one process: it takes the lock on its own descriptor, then becomes the sleep that holds it)
bash -c 'exec 9>"$1" && flock 9 && exec sleep 300' lock "$work/hosts/healthy/venv/.venvfix/lock" &
lock_pid=$!
pids+=("$lock_pid")
for _ in $(seq 100); do
  flock -n "$work/hosts/healthy/venv/.venvfix/lock" true 2>/dev/null || break
  sleep 0.1
done
python3 -c 'import json, sys; print(json.dumps({"venvfix_errors": {
    "seed-a": {"index_url": "http://127.0.0.1:9/simple"}, "seed-b": {"verify_cmd": "false"},
    "healthy": {"plan": sys.argv[1]}}}))' "$work/hosts/healthy/plan.json" >"$work/failures.json"
before=$(fingerprints)
playbook errors errors.yml --limit seed-a,seed-b,healthy -e "@$work/failures.json"
kill "$lock_pid"
[ "$before" = "$(fingerprints)" ] || { echo "fleet-test: a failed repair changed a venv" >&2; diff <(echo "$before") <(fingerprints) >&2; exit 1; }
expect_imports no seed-a seed-b

# The one-step playbook (plan now, apply), twice: repairs the rolled-back hosts, then nothing.
playbook heal heal.yml
expect_imports yes seed-a seed-b
before=$(fingerprints)
playbook heal-again heal.yml
[ "$before" = "$(fingerprints)" ] || { echo "fleet-test: a second heal changed a venv" >&2; exit 1; }

log "passed"
