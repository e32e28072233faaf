/** The --json line (src/cli/output.ts printJson): whatever a report or an error's context holds, it is printed. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { errorInfo, printJson } from '../../src/cli/output.js';

describe('printJson', () => {
  it('prints a bigint in an error context as a number (its text beyond 2^53), not a TypeError in place of the refusal', () => {
    let text = '';
    const err = new ConfigError('[job] orders: refused', {
      field: 'target.key',
      examples: [{ order_id: 1n }, { order_id: 2n ** 60n }],
    });
    printJson({ write: (t) => void (text += t) }, { status: 'failed', error: errorInfo(err) });
    expect(JSON.parse(text)).toEqual({
      status: 'failed',
      error: {
        type: 'ConfigError',
        message: '[job] orders: refused',
        context: {
          field: 'target.key',
          examples: [{ order_id: 1 }, { order_id: '1152921504606846976' }],
        },
        retryable: false,
      },
    });
  });
});
