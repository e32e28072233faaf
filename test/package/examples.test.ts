/**
 * The scheduler examples in examples/ stay usable: the YAML parses (and the CronJob forbids
 * overlap and fails fast on exit 1/2), the Airflow DAG compiles under python3, the systemd units
 * have their sections and do not restart on 1/2, the crontab line is one schedule with flock; and
 * each says what the exit codes mean.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

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

const EVERY_EXAMPLE = ['crontab', 'kubernetes/cronjob.yaml', 'airflow/tidemark_dag.py', 'systemd/tidemark.service'];

describe('examples/', () => {
  it.each(EVERY_EXAMPLE)('%s explains the exit codes 0, 1, 2, 3, 4 and 130', (name) => {
    const text = read(name);
    for (const code of ['0', '1', '2', '3', '4', '130']) expect(text).toMatch(new RegExp(`(^|\\s)${code}\\s+(done|a job failed|bad usage|lost a commit race|storage unavailable|interrupted)`, 'm'));
  });

  it('every YAML file parses; the CronJob forbids overlap and fails the Job on exit 1 and 2', () => {
    const yamlFiles = readdirSync(new URL('kubernetes/', EXAMPLES)).filter((f) => /\.ya?ml$/.test(f));
    expect(yamlFiles.length).toBeGreaterThan(0);
    for (const f of yamlFiles) {
      for (const doc of parseAllDocuments(read(`kubernetes/${f}`))) expect(doc.errors.map(String)).toEqual([]);
    }
    const [cron, configMap] = parseAllDocuments(read('kubernetes/cronjob.yaml')).map((d) => d.toJS() as Record<string, any>);
    expect(cron!['kind']).toBe('CronJob');
    expect(cron!['spec']['concurrencyPolicy']).toBe('Forbid');
    const job = cron!['spec']['jobTemplate']['spec'];
    expect(job['template']['spec']['restartPolicy']).toBe('Never');
    expect(job['podFailurePolicy']['rules'][0]).toMatchObject({ action: 'FailJob', onExitCodes: { operator: 'In', values: [1, 2] } });
    // The config inside the ConfigMap is itself valid YAML.
    expect(parseAllDocuments(configMap!['data']['tidemark.yaml'])[0]!.errors).toEqual([]);
  });

  const python = hasPython();
  it.skipIf(!python)(`airflow/tidemark_dag.py compiles under python3${python ? '' : ' (SKIPPED: no python3 on PATH)'}`, () => {
    const file = new URL('airflow/tidemark_dag.py', EXAMPLES).pathname;
    execFileSync('python3', ['-c', 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")', file]);
  });

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
    const lines = read('crontab').split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^(\S+\s+){5}flock -n /);
    expect(lines[0]).toContain('tidemark run');
    expect(lines[0]).not.toContain('%'); // cron would read % as a newline
  });
});
