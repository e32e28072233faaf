/**
 * OpenLineage events of real runs, received by an HTTP server on loopback and written to an NDJSON
 * file: START then COMPLETE for a run (the loaded files as inputs, the table as output), FAIL with
 * the error for a failing one; every event valid against OpenLineage's published JSON schema
 * (vendored, see test/fixtures/openlineage). A receiver that answers 503 does not fail the run.
 */
import { promises as fsp } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, DuckSession, tempDir } from '../job/helpers.js';
import { cli, orderJob } from './cli-helpers.js';
import { openLineageProblems } from './openlineage-schema.js';

type Event = {
  eventType: string;
  run: { runId: string; facets: Record<string, { run?: { runId: string }; message?: string }> };
  job: { namespace: string; name: string };
  inputs: Array<{ namespace: string; name: string }>;
  outputs: Array<{
    namespace: string;
    name: string;
    outputFacets?: { outputStatistics?: { rowCount: number } };
  }>;
};

let session: DuckSession;
let server: Server;
let url: string;
const received: Array<{ path: string; event: Event }> = [];
const dirs: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ path: req.url ?? '', event: JSON.parse(body) as Event });
      res.statusCode = req.url === '/down' ? 503 : 201;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  session?.close();
  await new Promise((resolve) => server?.close(resolve));
  await cleanup(dirs);
});

describe('OpenLineage events', () => {
  it('a run sends START and COMPLETE (inputs: the loaded files; output: the table), valid against the spec, to the endpoint and the file', async () => {
    const file = path.join(await tempDir('obs-ol', dirs), 'lineage', 'events.ndjson');
    const { config, root, target } = await orderJob(session, dirs, {
      lineage: { url: `${url}/api/v1/lineage`, file, namespace: 'lake' },
    });
    received.length = 0;
    const r = await cli(['run', '--config', config, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { runId: string; status: string };
    expect(report.status).toBe('succeeded');

    const events = received.map((x) => x.event);
    expect(received.map((x) => x.path)).toEqual(['/api/v1/lineage', '/api/v1/lineage']);
    expect(events.map((e) => e.eventType)).toEqual(['START', 'COMPLETE']);
    for (const e of events) expect(openLineageProblems(e)).toEqual([]);
    const [start, complete] = events as [Event, Event];
    expect(start.run.runId).toBe(complete.run.runId);
    expect(start.run.runId).not.toBe(report.runId);
    expect(complete.run.facets['parent']?.run?.runId).toBe(report.runId);
    expect(complete.job).toEqual({ namespace: 'lake', name: 'orders', facets: expect.any(Object) });
    expect(complete.inputs.map((d) => [d.namespace, d.name])).toEqual([
      ['file', path.join(root, '2025/05/01/a.csv')],
      ['file', path.join(root, '2025/05/02/b.ndjson')],
    ]);
    expect(complete.outputs).toMatchObject([
      { namespace: 'file', name: target, outputFacets: { outputStatistics: { rowCount: 3 } } },
    ]);

    const lines = (await fsp.readFile(file, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Event);
    expect(lines).toEqual(events);
  });

  it('a failing run sends FAIL with the error; a receiver answering 503 is a warning, not a failure', async () => {
    const { config, root } = await orderJob(session, dirs, { lineage: { url: `${url}/fail` } });
    await fsp.writeFile(path.join(root, '2025/05/02/c.ndjson'), '{"order_id": 1, "status": ');
    received.length = 0;
    const failed = await cli(['run', '--config', config, '--json']);
    expect(failed.code, failed.stderr).toBe(1);
    const events = received.map((x) => x.event);
    expect(events.map((e) => e.eventType)).toEqual(['START', 'FAIL']);
    for (const e of events) expect(openLineageProblems(e)).toEqual([]);
    expect(events[1]!.run.facets['errorMessage']?.message).toContain('c.ndjson');

    const down = await orderJob(session, dirs, { lineage: { url: `${url}/down` } });
    const ok = await cli(['run', '--config', down.config, '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toContain('lineage event not delivered');
    expect(ok.stderr).toContain('HTTP 503');
  });

  it('a lineage file that cannot be written (under /proc) is a warning; the run ends with exit 0', async () => {
    const { config } = await orderJob(session, dirs, {
      lineage: { file: '/proc/nope/events.ndjson' },
    });
    const r = await cli(['run', '--config', config, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('lineage event not delivered');
    expect(r.stderr).toContain('/proc/nope');
  }, 20_000);

  it('the schema check catches a broken event (so the tests above prove something)', () => {
    const broken = {
      eventType: 'START',
      eventTime: 'yesterday',
      producer: 'urn:x',
      schemaURL: 'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent',
      run: {
        runId: 'not-a-uuid',
        facets: {
          errorMessage: {
            _producer: 'urn:x',
            _schemaURL:
              'https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet',
            message: 'x',
          },
        },
      },
      job: { namespace: 'n' },
    };
    const problems = openLineageProblems(broken).join('\n');
    expect(problems).toContain('eventTime must match format "date-time"');
    expect(problems).toContain('runId must match format "uuid"');
    expect(problems).toContain("must have required property 'name'");
    expect(problems).toContain("must have required property 'programmingLanguage'");
  });
});
