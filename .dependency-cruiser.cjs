/**
 * The layers of src/, enforced (npm test runs this). From the top: cli → observe → job → maintenance →
 * engine → delta → storage, with config, discovery, log, spool and errors beside them; every
 * arrow points down. See docs/architecture.md.
 */
const layer = (name) => `^src/${name}/`;
const anyOf = (...names) => `^src/(${names.join('|')})/`;

/** A rule forbidding imports from one folder into others. */
function forbid(name, from, to, why) {
  return { name, severity: 'error', comment: why, from: { path: from }, to: { path: to } };
}

module.exports = {
  forbidden: [
    forbid(
      'delta-is-self-contained',
      layer('delta'),
      anyOf('engine', 'job', 'cli', 'config', 'maintenance', 'discovery', 'log', 'spool'),
      'The Delta layer knows nothing of DuckDB, jobs or the CLI: it takes interfaces (CheckpointIO, DataFileDescription) at its seams.',
    ),
    forbid(
      'engine-below-job',
      layer('engine'),
      anyOf('job', 'cli', 'config', 'maintenance', 'discovery'),
      'The engine (DuckDB) stages writes; the job decides what to commit. No call back up.',
    ),
    forbid(
      'discovery-is-pure',
      layer('discovery'),
      anyOf('job', 'cli', 'engine', 'delta', 'maintenance', 'spool'),
      'Discovery plans over listings; it reads storage and nothing else.',
    ),
    forbid(
      'storage-at-the-bottom',
      layer('storage'),
      anyOf('delta', 'engine', 'job', 'cli', 'config', 'discovery', 'maintenance', 'spool'),
      'Storage drivers import nothing of tidemark above them.',
    ),
    forbid(
      'spool-at-the-bottom',
      layer('spool'),
      anyOf(
        'delta',
        'engine',
        'job',
        'cli',
        'config',
        'discovery',
        'maintenance',
        'storage',
        'log',
      ),
      'The spool owns local scratch space and depends on nothing of tidemark.',
    ),
    forbid(
      'log-at-the-bottom',
      layer('log'),
      anyOf(
        'delta',
        'engine',
        'job',
        'cli',
        'config',
        'discovery',
        'maintenance',
        'storage',
        'spool',
      ),
      'Logging is used by every layer and uses none.',
    ),
    forbid(
      'maintenance-below-job',
      layer('maintenance'),
      anyOf('job', 'cli', 'config'),
      'optimize and vacuum work on a table; the job layer runs them for a configured job.',
    ),
    forbid(
      'config-below-job',
      layer('config'),
      anyOf('job', 'cli', 'engine', 'delta', 'maintenance', 'storage'),
      'The config is read by the CLI and the job, and reads only discovery (to validate layouts).',
    ),
    forbid(
      'job-below-cli',
      layer('job'),
      layer('cli'),
      'The job returns outcomes as values; the CLI prints them.',
    ),
    forbid(
      'observe-below-cli',
      layer('observe'),
      layer('cli'),
      'Lineage and metrics wrap a job run for the CLI; they print nothing of their own.',
    ),
    forbid(
      'observe-reads-reports',
      layer('observe'),
      anyOf('engine', 'delta', 'maintenance', 'spool'),
      'Observers describe a run from its config and report; they never read the table, DuckDB or scratch space themselves, so a failing observer cannot touch the data.',
    ),
    forbid(
      'observe-above-the-rest',
      anyOf(
        'job',
        'maintenance',
        'config',
        'discovery',
        'engine',
        'delta',
        'storage',
        'spool',
        'log',
      ),
      layer('observe'),
      'A run knows nothing of its observers: the CLI wraps it in them.',
    ),
    forbid(
      'sql-stays-in-the-engine',
      anyOf('job', 'cli'),
      '^src/engine/sql\\.ts$',
      "SQL text is the engine's: the job and the CLI call engine functions that say what they do and pass relations as handles, so every identifier and literal is quoted in one layer.",
    ),
    forbid(
      'errors-at-the-bottom',
      '^src/errors\\.ts$',
      '^src/(?!errors\\.ts$)',
      'Typed errors depend on nothing.',
    ),
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'A cycle makes two modules impossible to understand or test apart.',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(node_modules|dist)/' },
  },
};
