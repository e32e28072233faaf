/**
 * `target.tableProperties`: the Delta table properties (`metaData.configuration`) of a table the
 * job creates. Properties outside `delta.` are the user's and pass as they are; a `delta.`
 * property must be one tidemark honours, with a value of the right form, so a typo never creates
 * a table without the feature it was meant to have (or with one tidemark cannot keep up).
 * YAML booleans and numbers are written as the strings Delta stores.
 */
import { z } from 'zod';

/** Checks a property's value; returns why it is wrong, or null. */
type ValueCheck = (value: string) => string | null;

const boolean: ValueCheck = (v) => (/^(true|false)$/i.test(v) ? null : 'must be true or false');
const positiveInteger: ValueCheck = (v) =>
  /^[1-9]\d*$/.test(v) ? null : 'must be a positive integer';
const indexedColumns: ValueCheck = (v) =>
  /^(-1|0|[1-9]\d*)$/.test(v) ? null : 'must be an integer of -1 or more';
const interval: ValueCheck = (v) =>
  /^(interval\s+)?(\d+\s+[a-z]+\s*)+$/i.test(v.trim())
    ? null
    : "must be an interval such as 'interval 7 days'";
const oneOf =
  (...values: string[]): ValueCheck =>
  (v) =>
    values.includes(v.toLowerCase()) ? null : `must be one of ${values.join(', ')}`;

/** The `delta.` properties a table created by tidemark may set, each honoured by its writers. */
const DELTA_PROPERTIES: Readonly<Record<string, ValueCheck>> = {
  'delta.appendOnly': boolean,
  'delta.enableDeletionVectors': boolean,
  'delta.enableChangeDataFeed': boolean,
  'delta.enableRowTracking': boolean,
  'delta.enableInCommitTimestamps': boolean,
  'delta.checkpointPolicy': oneOf('classic', 'v2'),
  'delta.checkpointInterval': positiveInteger,
  'delta.dataSkippingNumIndexedCols': indexedColumns,
  'delta.deletedFileRetentionDuration': interval,
  'delta.logRetentionDuration': interval,
};

/** Why a property cannot be set, or null when it can. */
function propertyProblem(key: string, value: string): string | null {
  if (!key.toLowerCase().startsWith('delta.')) return null;
  const check = DELTA_PROPERTIES[key];
  if (!check)
    return `is not a Delta table property tidemark sets (it sets ${Object.keys(DELTA_PROPERTIES).join(', ')})`;
  return check(value);
}

/** The `target.tableProperties` field: string, boolean or number values, validated and turned into strings. */
export const tableProperties = z
  .record(
    z.string().trim().min(1, 'a property name must not be empty'),
    z.union([z.string(), z.boolean(), z.number()]),
  )
  .transform((props, ctx) => {
    const out: Record<string, string> = {};
    for (const [key, raw] of Object.entries(props)) {
      const value = String(raw);
      const problem = propertyProblem(key, value);
      if (problem)
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `${problem}, got ${JSON.stringify(raw)}`,
        });
      out[key] = value;
    }
    return out;
  });
