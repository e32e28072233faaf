// `npm test`: the typecheck and lint beside vitest, not before it. Each of them runs as it did
// (`npm run typecheck`, `npm run lint`, `vitest run` with npm test's arguments); npm test fails if
// any fails. Side by side because vitest leaves most of a core idle (its tests wait on timers,
// child processes and s3rver) while tsc and the linters, about 40 s on two cores, are CPU work
// that used to run alone first. Their output is printed when they finish, so it does not cut
// through vitest's; a failure of either stops vitest, as the check before it used to.
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Run `command args` with its output captured; resolves with its exit code and output. */
function captured(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
  });
}

// vitest's own entry, by node: a signal reaches vitest itself, not an npx in between.
const vitest = spawn(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)],
  {
    stdio: 'inherit',
  },
);
const vitestDone = new Promise((resolve) =>
  vitest.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))),
);

let checksFailed = false;
for (const script of ['typecheck', 'lint']) {
  const { code, out } = await captured(npm, ['run', '--silent', script]);
  if (code === 0) {
    process.stderr.write(`\nnpm test: ${script} passed\n`);
    continue;
  }
  process.stderr.write(`\nnpm test: ${script} failed (exit ${code}):\n${out}\n`);
  checksFailed = true;
  vitest.kill('SIGTERM');
  break;
}

const vitestCode = await vitestDone;
process.exit(checksFailed ? 1 : vitestCode);
