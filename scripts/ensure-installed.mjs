// Runs before `npm run demo` / `npm test`: on a fresh clone, install exactly what the lock
// file pins (`npm ci`), so the quick start is two commands. Does nothing once installed.
import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';

if (!existsSync('node_modules/.package-lock.json')) {
  console.error('tidemark: first run, installing dependencies with npm ci ...');
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit' });
}
