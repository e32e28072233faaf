#!/usr/bin/env bash
# The storage tests on a second real S3 implementation, moto's S3 server, and notification
# discovery on moto's SQS (the same server; interop/run.sh calls
# this with its virtual environment, which holds moto): moto_server on 127.0.0.1 with a port of
# its choosing, named to vitest in TIDEMARK_MOTO_ENDPOINT (test/helpers/moto.ts), stopped at the
# end. Extra arguments go to vitest.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
venv="${1:?usage: storage-on-moto.sh VENV [vitest arguments]}"
shift

say() { printf 'interop: %s\n' "$*" >&2; }

log="$(mktemp "${TMPDIR:-/tmp}/tidemark-moto-XXXXXX.log")"
"$venv/bin/moto_server" --host 127.0.0.1 --port 0 >"$log" 2>&1 &
moto=$!
stop_moto() {
  kill "$moto" 2>/dev/null || true
  wait "$moto" 2>/dev/null || true
  rm -f "$log"
}
trap stop_moto EXIT

# moto_server prints "Running on http://127.0.0.1:<port>" once it listens (10 s at most).
port=""
for _ in $(seq 1 100); do
  port="$(grep -o 'Running on http://127\.0\.0\.1:[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
  [[ -n "$port" ]] && break
  kill -0 "$moto" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$port" ]]; then
  say "moto_server did not start:"
  cat "$log" >&2
  exit 1
fi

say "storage tests on moto $("$venv/bin/python" -c 'import moto; print(moto.__version__)') at http://127.0.0.1:$port"
cd "$repo"
TIDEMARK_MOTO_ENDPOINT="http://127.0.0.1:$port" npx vitest run --maxWorkers=2 -t 'moto' "$@" \
  test/storage/contract.test.ts test/storage/s3.checksums.test.ts test/storage/s3.faults.test.ts \
  test/storage/s3.invariant.test.ts test/delta/commit.ambiguous.test.ts test/job/notifications.moto.test.ts
