#!/usr/bin/env bash
# ansible-test sanity on the collection, offline. ansible-test needs the collection at
# .../ansible_collections/<namespace>/<name>/, so it runs on a copy in a temp dir. It also runs
# each test in a virtual environment of its own into which it pip-installs pinned tools from
# PyPI; with no network here, those environments are made in advance instead (ansible-test
# takes one with a marker.txt as complete), with --system-site-packages so that Debian's
# pylint, yamllint, voluptuous and pycodestyle (scripts/setup.sh installs them) are the tools.
# Their versions are Debian 12's, not ansible-test's pins; the script prints both.
# Usage: integrations/ansible/tests/sanity.sh [ansible-test sanity options...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
python=${VENVFIX_SANITY_PYTHON:-/usr/bin/python3}
for tool in ansible-test "$python"; do
  command -v "$tool" >/dev/null || { echo "sanity: $tool is missing (scripts/setup.sh)" >&2; exit 77; }
done
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

work=$(mktemp -d "${TMPDIR:-/tmp}/venvfix-ansible-sanity.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/venvfix/venvfix"
mkdir -p "$dest"
(cd "$here" && tar --exclude=./tests/output -cf - .) | tar -xf - -C "$dest"
export HOME="$work/home"  # ansible-test keeps its environments under ~/.ansible/test

# One environment per distinct requirement set, at the path ansible-test computes for it.
cd "$dest"
"$python" - "$version" <<'PY' | while read -r label hash; do
import sys
from ansible_test._internal.commands.sanity import hash_pip_commands, sanity_get_tests
from ansible_test._internal.host_configs import NativePythonConfig
from ansible_test._internal.python_requirements import collect_requirements
python = NativePythonConfig(version=sys.argv[1], path=sys.executable)
for test in sanity_get_tests():
    commands = collect_requirements(python=python, controller=True, virtualenv=False, command=None,
                                    ansible=False, cryptography=False, coverage=False,
                                    minimize=False, sanity=test.name)
    print('sanity.' + test.name if commands else 'sanity', hash_pip_commands(commands))
PY
  venv="$HOME/.ansible/test/venv/$label/$version/$hash"
  [ -e "$venv/marker.txt" ] && continue
  "$python" -m venv --system-site-packages --without-pip "$venv"
  echo true >"$venv/meta.yaml.json"
  : >"$venv/meta.install.json"
  touch "$venv/marker.txt"
done

echo "sanity: tools (Debian's): $("$python" -m pylint --version 2>/dev/null | head -1);" \
  "yamllint $("$python" -m yamllint --version 2>/dev/null | awk '{print $2}');" \
  "voluptuous $("$python" -c 'import voluptuous; print(voluptuous.__version__)' 2>/dev/null);" \
  "pycodestyle $("$python" -m pycodestyle --version 2>/dev/null)" >&2
# ansible-test refuses to start when its stdin, stdout or stderr is non-blocking, as a CI runner's
# may be (one CI run failed so): it reads /dev/null and writes to a file of ours, printed after.
rc=0
ansible-test sanity --python "$version" --python-interpreter "$python" --color no "$@" \
  </dev/null >"$work/sanity.log" 2>&1 || rc=$?
cat "$work/sanity.log" || true  # the exit status is ansible-test's, even if printing fails
exit "$rc"
