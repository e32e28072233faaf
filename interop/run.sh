#!/usr/bin/env bash
# npm run test:interop: Spark (Delta Lake), delta-rs and Polars read the tables the real tidemark
# CLI writes; before them, the storage tests run on moto's S3 server (interop/storage-on-moto.sh).
# Needs Python 3.10+ and Java 17+, and the network to PyPI and Maven Central on the first run; the
# virtual environment (interop/.venv) and the pip and Ivy caches
# (interop/.cache/) are reused while interop/requirements.txt is unchanged.
# Extra arguments go to pytest (e.g. -k merge_dv). At the end it prints the total time and each
# phase's (issue 22: the cold run, from a clean clone, must stay under 20 minutes on 2 cores).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
venv="$here/.venv"
cache="$here/.cache"
started=$(date +%s)

say() { printf 'interop: %s\n' "$*" >&2; }
fail() {
  say "$*"
  exit 1
}
# phase NAME: the phase before ends here (its time is kept for the last line), NAME begins.
phase_name=""
phase_started=$started
phases=""
phase() {
  local now
  now=$(date +%s)
  [[ -n "$phase_name" ]] && phases+="${phases:+, }$phase_name $((now - phase_started)) s"
  phase_name="$1"
  phase_started=$now
}
report_time() {
  local code=$?
  phase ""
  say "finished in $(($(date +%s) - started)) s (exit $code): ${phases:-nothing ran}"
}
trap report_time EXIT

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || fail "needs Python 3.10 or later: no $python on PATH (set PYTHON to another interpreter)"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
  fail "needs Python 3.10 or later; $python is $("$python" --version 2>&1)"

command -v java >/dev/null || fail "needs Java 17 or later (Spark 4): no java on PATH"
java_version="$(java -version 2>&1 | awk -F'"' '/version/ { print $2; exit }')"
java_major="${java_version%%.*}"
[[ "$java_major" == 1 ]] && java_major="$(echo "$java_version" | cut -d. -f2)"
[[ "$java_major" =~ ^[0-9]+$ ]] && ((java_major >= 17)) ||
  fail "needs Java 17 or later (Spark 4); java -version says ${java_version:-nothing}"

# The environment, rebuilt whenever requirements.txt changes (its hash is the stamp).
stamp="$venv/requirements.sha256"
wanted="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$wanted" ]]; then
  phase "Python environment"
  say "creating $venv from requirements.txt"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input --cache-dir "$cache/pip")
  # pyspark ships as a source distribution: build it with the pinned setuptools, not whatever
  # an isolated build environment would fetch.
  "${pip[@]}" install --quiet --no-deps "$(grep -E '^setuptools==' "$here/requirements.txt")"
  "${pip[@]}" install --quiet --no-deps --no-build-isolation -r "$here/requirements.txt"
  "${pip[@]}" check
  echo "$wanted" >"$stamp"
fi

# tidemark's CLI runs from dist/: build it when it is missing or older than a source file.
if [[ ! -f "$repo/dist/cli/bin.js" ]] || [[ -n "$(find "$repo/src" -newer "$repo/dist/cli/bin.js" -print -quit)" ]]; then
  phase "npm run build"
  say "building tidemark (npm run build)"
  (cd "$repo" && npm run --silent build)
fi

# The storage tests on moto's S3 server, a second real S3 implementation beside s3rver.
phase "storage tests on moto"
bash "$here/storage-on-moto.sh" "$venv"

export TIDEMARK_INTEROP_CACHE="$cache"
cd "$repo"
phase "pytest"
"$venv/bin/python" -m pytest -c "$here/pytest.ini" --rootdir "$here" "$@" "$here/tests"
