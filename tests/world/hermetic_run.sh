#!/bin/sh
# Run a command with a system loader view that holds no CUDA (docs/test-world.md).
#
#   tests/world/hermetic_run.sh CACHE -- CMD [ARGS...]
#
# In a private mount namespace (unshare -m, needs root), CACHE is bind-mounted over
# /etc/ld.so.cache, and an empty tmpfs covers every /usr/local/cuda* directory and every
# directory named in /etc/ld.so.conf.d/*.conf whose path mentions cuda. Nothing outside the
# namespace changes. CMD's exit status is returned.
set -eu
if [ $# -lt 3 ] || [ "$2" != "--" ]; then
    echo "usage: $0 CACHE -- CMD [ARGS...]" >&2
    exit 2
fi
cache=$1
shift 2
if [ ! -f "$cache" ]; then
    echo "hermetic_run.sh: $cache is not a file (build it with: world.py hermetic-cache --out FILE)" >&2
    exit 2
fi
exec unshare -m --propagation private -- sh -eu -c '
    cache=$1; shift
    mount --bind "$cache" /etc/ld.so.cache
    hide=""
    for d in /usr/local/cuda*; do
        [ -d "$d" ] && [ ! -L "$d" ] && hide="$hide $d"
    done
    for f in /etc/ld.so.conf.d/*.conf; do
        [ -f "$f" ] || continue
        for d in $(grep -i cuda "$f" | grep "^/" || true); do
            [ -d "$d" ] && hide="$hide $d"
        done
    done
    for d in $hide; do
        mount -t tmpfs -o ro,size=4k venvfix-hermetic "$d" 2>/dev/null || true
    done
    exec "$@"
' hermetic "$cache" "$@"
