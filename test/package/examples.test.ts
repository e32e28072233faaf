/**
 * The scheduler examples in examples/ stay usable: the YAML parses (and the CronJob forbids
 * overlap and fails fast on exit 1/2), the Airflow DAG compiles under python3, the systemd units
 * have their sections and do not restart on 1/2, the crontab line is one schedule with flock; and
 * each says what the exit codes mean. The sharded-backfill examples (a Kubernetes Indexed Job, an
 * Airflow DAG mapped over shards, an AWS Batch array job) are also run: their tidemark command,
 * with the index their scheduler would set, is given to the real CLI (`--dry-run`, a local config
 * standing in for theirs), which must run the shard the index names.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parseDocument } from 'yaml';
import { silentLogger } from '../../src/log/logger.js';
import { cli } from '../helpers/cli.js';

const EXAMPLES = new URL('../../examples/', import.meta.url);
const read = (name: string) => readFileSync(new URL(name, EXAMPLES), 'utf8');

function hasPython(): boolean {
  try {
    execFileSync('python3', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const EVERY_EXAMPLE = [
  'crontab',
  'kubernetes/cronjob.yaml',
  'kubernetes/backfill-indexed-job.yaml',
  'airflow/tidemark_dag.py',
  'airflow/tidemark_backfill_dag.py',
  'aws-batch/README.md',
  'systemd/tidemark.service',
];

describe('examples/', () => {
  it.each(EVERY_EXAMPLE)('%s explains the exit codes 0, 1, 2, 3, 4 and 130', (name) => {
    const text = read(name);
    for (const code of ['0', '1', '2', '3', '4', '130'])
      expect(text).toMatch(
        new RegExp(
          `(^|\\s)${code}\\s+(done|a job failed|bad usage|lost a commit race|storage unavailable|interrupted)`,
          'm',
        ),
      );
  });

  it('every YAML file parses; the CronJob forbids overlap and fails the Job on exit 1 and 2', () => {
    const yamlFiles = readdirSync(new URL('kubernetes/', EXAMPLES)).filter((f) =>
      /\.ya?ml$/.test(f),
    );
    expect(yamlFiles.length).toBeGreaterThan(0);
    for (const f of yamlFiles) {
      for (const doc of parseAllDocuments(read(`kubernetes/${f}`)))
        expect(doc.errors.map(String)).toEqual([]);
    }
    const [cron, configMap] = parseAllDocuments(read('kubernetes/cronjob.yaml')).map(
      (d) => d.toJS() as Record<string, any>,
    );
    expect(cron!['kind']).toBe('CronJob');
    expect(cron!['spec']['concurrencyPolicy']).toBe('Forbid');
    const job = cron!['spec']['jobTemplate']['spec'];
    expect(job['template']['spec']['restartPolicy']).toBe('Never');
    expect(job['podFailurePolicy']['rules'][0]).toMatchObject({
      action: 'FailJob',
      onExitCodes: { operator: 'In', values: [1, 2] },
    });
    // The config inside the ConfigMap is itself valid YAML.
    expect(parseAllDocuments(configMap!['data']['tidemark.yaml'])[0]!.errors).toEqual([]);
  });

  const python = hasPython();
  it.skipIf(!python)(
    `airflow/tidemark_dag.py compiles under python3${python ? '' : ' (SKIPPED: no python3 on PATH)'}`,
    () => {
      const file = new URL('airflow/tidemark_dag.py', EXAMPLES).pathname;
      execFileSync('python3', [
        '-c',
        'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")',
        file,
      ]);
    },
  );

  it('the systemd units have their sections; the service does not restart on 1 or 2', () => {
    const service = read('systemd/tidemark.service');
    const timer = read('systemd/tidemark.timer');
    for (const s of ['[Unit]', '[Service]']) expect(service).toContain(s);
    for (const s of ['[Unit]', '[Timer]', '[Install]']) expect(timer).toContain(s);
    expect(service).toMatch(/^Type=oneshot$/m);
    expect(service).toMatch(/^RestartPreventExitStatus=1 2 130$/m);
    expect(timer).toMatch(/^OnCalendar=/m);
  });

  it('the crontab line is one five-field schedule run under flock', () => {
    const lines = read('crontab')
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^(\S+\s+){5}flock -n /);
    expect(lines[0]).toContain('tidemark run');
    expect(lines[0]).not.toContain('%'); // cron would read % as a newline
  });
});

/** A local stand-in for the examples' /config/tidemark.yaml: job `orders`, one landed partition. */
const scratch = mkdtempSync(join(tmpdir(), 'tidemark-examples-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const localConfig = (() => {
  mkdirSync(join(scratch, 'landing', '2026', '01', '15'), { recursive: true });
  writeFileSync(
    join(scratch, 'landing', '2026', '01', '15', 'a.csv'),
    'order_id,updated_at\n1,2026-01-15T10:00:00Z\n',
  );
  const file = join(scratch, 'tidemark.yaml');
  writeFileSync(
    file,
    'jobs:\n  - name: orders\n    source: { uri: ./landing, discover: { by: partition, layout: "{yyyy}/{mm}/{dd}" } }\n    target: { uri: ./table, key: [order_id], orderBy: updated_at }\n',
  );
  return file;
})();

/** Run an example's tidemark arguments (its --config replaced by the local one) as a dry run with `env` set; the report. */
async function dryRun(
  args: readonly string[],
  env: Record<string, string>,
): Promise<Record<string, unknown>> {
  const argv = args
    .map((a, i) => (args[i - 1] === '--config' ? localConfig : a))
    .filter((a) => a !== '--json');
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    const r = await cli([...argv, '--dry-run', '--json'], { logger: silentLogger(), tty: false });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

const flag = (args: readonly string[], name: string): string | undefined => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
};

describe('examples/ of sharded backfills', () => {
  it('the Kubernetes Indexed Job runs one shard per completion index, as many as --shards; exit 1 and 2 fail only that index', async () => {
    const job = parseDocument(read('kubernetes/backfill-indexed-job.yaml')).toJS() as Record<
      string,
      any
    >;
    expect(job['kind']).toBe('Job');
    const spec = job['spec'];
    expect(spec['completionMode']).toBe('Indexed');
    const args = spec['template']['spec']['containers'][0]['args'] as string[];
    expect(args.slice(0, 1)).toEqual(['backfill']);
    expect(flag(args, '--shard-index-env')).toBe('JOB_COMPLETION_INDEX');
    const shards = Number(flag(args, '--shards'));
    expect([spec['completions'], spec['parallelism']]).toEqual([shards, shards]);
    expect(spec['backoffLimitPerIndex']).toBeGreaterThan(0);
    expect(spec['podFailurePolicy']['rules'][0]).toMatchObject({
      action: 'FailIndex',
      onExitCodes: { operator: 'In', values: [1, 2] },
    });
    for (let k = 0; k < shards; k++) {
      expect(await dryRun(args, { JOB_COMPLETION_INDEX: String(k) })).toMatchObject({
        command: 'backfill',
        status: 'dry-run',
        shard: `${k + 1}/${shards}`,
        from: '2026-01-01',
        to: '2026-03-31',
      });
    }
  });

  it('the AWS Batch array job: each array index runs its shard; the range comes from the parameters; retries only on 3, 4 and 130', async () => {
    const def = JSON.parse(read('aws-batch/backfill-job-definition.json')) as Record<string, any>;
    const submit = JSON.parse(read('aws-batch/submit-backfill.json')) as Record<string, any>;
    const params = { ...def['parameters'], ...submit['parameters'] } as Record<string, string>;
    const args = (def['containerProperties']['command'] as string[]).map((a) =>
      a.startsWith('Ref::') ? params[a.slice(5)]! : a,
    );
    expect(flag(args, '--shard-index-env')).toBe('AWS_BATCH_JOB_ARRAY_INDEX');
    const shards = Number(flag(args, '--shards'));
    expect(submit['arrayProperties']['size']).toBe(shards);
    expect(submit['jobDefinition']).toBe(def['jobDefinitionName']);
    const rules = def['retryStrategy']['evaluateOnExit'] as Array<{
      onExitCode?: string;
      action: string;
    }>;
    const action = (code: string) => rules.find((r) => r.onExitCode === code)?.action;
    expect(['1', '2', '3', '4', '130'].map(action)).toEqual([
      'EXIT',
      'EXIT',
      'RETRY',
      'RETRY',
      'RETRY',
    ]);
    for (let k = 0; k < shards; k++) {
      expect(await dryRun(args, { AWS_BATCH_JOB_ARRAY_INDEX: String(k) })).toMatchObject({
        status: 'dry-run',
        shard: `${k + 1}/${shards}`,
        from: params['from'],
        to: params['to'],
      });
    }
  });

  it('the Airflow DAG maps a task over the shard numbers 1 … N and passes TIDEMARK_SHARD=K/N, which the CLI takes', async () => {
    const dag = read('airflow/tidemark_backfill_dag.py');
    expect(dag).toMatch(/\.expand\(shard=/);
    expect(dag).toMatch(/range\(1, int\(.*\) \+ 1\)/);
    expect(dag).toMatch(/"TIDEMARK_SHARD": f"\{shard\}\/\{int\(params\['shards'\]\)\}"/);
    const args = [
      'backfill',
      '--config',
      '/opt/tidemark/tidemark.yaml',
      '--job',
      'orders',
      '--from',
      '2026-01-01',
      '--to',
      '2026-03-31',
    ];
    expect(await dryRun(args, { TIDEMARK_SHARD: '4/4' })).toMatchObject({
      status: 'dry-run',
      shard: '4/4',
    });
    if (hasPython())
      execFileSync('python3', [
        '-c',
        'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")',
        new URL('airflow/tidemark_backfill_dag.py', EXAMPLES).pathname,
      ]);
  });
});
