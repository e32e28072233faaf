#!/usr/bin/env bash
# The peers benchmark's Python environment (npm run bench -- peers): delta-rs (deltalake) and
# Spark with Delta Lake, at the pins of interop/requirements.txt (one home for the peers'
# versions), in .bench/python/venv. Rebuilt whenever that file changes (its hash is the stamp);
# pip's cache and Spark's Ivy cache live in .bench/python/cache. Prints the interpreter's path.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../../.." && pwd)"
requirements="$repo/interop/requirements.txt"
root="$repo/.bench/python"
venv="$root/venv"
cache="$root/cache"

say() { printf 'bench peers: %s\n' "$*" >&2; }
python="${PYTHON:-python3}"
command -v "$python" >/dev/null || { say "needs Python 3.10 or later: no $python on PATH (set PYTHON)"; exit 1; }
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || { say "needs Python 3.10 or later"; exit 1; }
command -v java >/dev/null || { say "needs Java 17 or later (Spark 4): no java on PATH"; exit 1; }

stamp="$venv/requirements.sha256"
wanted="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$wanted" ]]; then
  say "creating $venv from interop/requirements.txt (a few minutes the first time)"
  rm -rf "$venv"
  mkdir -p "$root"
  "$python" -m venv "$venv"
  pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input --cache-dir "$cache/pip")
  # pyspark ships as a source distribution: built with the pinned setuptools (as interop/run.sh does).
  "${pip[@]}" install --quiet --no-deps "$(grep -E '^setuptools==' "$requirements")"
  "${pip[@]}" install --quiet --no-deps --no-build-isolation -r "$requirements"
  "${pip[@]}" check >&2
  echo "$wanted" >"$stamp"
fi
echo "$venv/bin/python"
