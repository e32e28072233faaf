/**
 * Process entry: wire signals to an AbortSignal, run the CLI, exit with its code.
 * SIGINT/SIGTERM abort the run: it stops between steps (nothing half-committed: the commit is
 * atomic), reports the job as interrupted and exits 130 (docs/operations.md, Running from a scheduler; for SIGTERM too); the 'exit'
 * handler removes spool folders. A second signal, or a run still going 10 s later, exits 130 at once.
 *
 * The handlers come first and the CLI is imported after them: loading it (the AWS SDK, DuckDB)
 * takes most of a second, and a signal in that time would otherwise kill the process with 143
 * and nothing on stdout. A signal that arrives before the CLI runs ends it at once with 130
 * (and the --json failure object).
 */
import { setMaxListeners } from 'node:events';

// tidemark supports Node 20; the AWS SDK's notice about newer Node versions would only clutter logs.
process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';

const controller = new AbortController();
// Every object read in flight listens for the abort (up to source.concurrency, at most 256, each
// with a listener or two): Node's default limit of 10 printed a MaxListenersExceededWarning
// ("possible memory leak") into every run of more than ten files on S3. Listeners are removed as
// reads end, so a bound with room above the most in flight keeps the check for a real leak.
setMaxListeners(1024, controller.signal);
let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    signals += 1;
    if (signals > 1) process.exit(130);
    process.stderr.write(`tidemark: ${signal} received, stopping (nothing partial is committed)\n`);
    controller.abort(new Error(`interrupted by ${signal}`));
    setTimeout(() => process.exit(130), 10_000).unref();
  });
}

const { main } = await import('./main.js');
const code = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  signal: controller.signal,
});
process.exitCode = code;
