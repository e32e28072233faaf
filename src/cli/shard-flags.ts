/**
 * Which shard of a backfill this worker runs, from the command line or the environment:
 *
 *   --shard K/N                          explicit, K from 1 (1/4 … 4/4); also `all/N` for --dry-run / --restart
 *   --shards N --shard-index-env NAME    a scheduler's 0-based index, as it gives it (0 is shard 1/N):
 *                                        JOB_COMPLETION_INDEX (Kubernetes Indexed Job),
 *                                        AWS_BATCH_JOB_ARRAY_INDEX (AWS Batch)
 *   TIDEMARK_SHARD=K/N                   as --shard (K from 1), when neither flag is given (Airflow's
 *                                        mapped `env`, a pod spec)
 *
 * Flags win over TIDEMARK_SHARD; anything unclear is refused as bad usage (exit 2), never guessed.
 */
import { ConfigError } from '../errors.js';
import {
  parseShardSelection,
  shardFromIndexVariable,
  type ShardSelection,
} from '../job/backfill/shard.js';

/** The environment variable read when no shard flag is given. */
export const SHARD_VARIABLE = 'TIDEMARK_SHARD';

export interface ShardFlags {
  shard?: string;
  shards?: string;
  shardIndexEnv?: string;
}

/** The shard selection of the flags and `env`; undefined: the whole range, unsharded. */
export function shardSelectionOf(
  flags: ShardFlags,
  env: NodeJS.ProcessEnv = process.env,
): ShardSelection | undefined {
  const byIndex = flags.shards !== undefined || flags.shardIndexEnv !== undefined;
  if (flags.shard !== undefined && byIndex) {
    throw new ConfigError(
      'give either --shard K/N, or --shards N with --shard-index-env NAME, not both',
      { field: 'shard' },
    );
  }
  if (flags.shard !== undefined) return parseShardSelection(flags.shard, '--shard');
  if (byIndex) {
    if (flags.shards === undefined || flags.shardIndexEnv === undefined) {
      throw new ConfigError(
        "--shards N and --shard-index-env NAME go together: N shards, this worker's 0-based index in variable NAME",
        { field: 'shard' },
      );
    }
    if (!/^\s*\d+\s*$/.test(flags.shards))
      throw new ConfigError(
        `--shards ${JSON.stringify(flags.shards)}: expected a whole number of shards`,
        { field: 'shards' },
      );
    return {
      kind: 'one',
      shard: shardFromIndexVariable(
        flags.shardIndexEnv,
        env[flags.shardIndexEnv],
        Number(flags.shards),
      ),
    };
  }
  const fromEnv = env[SHARD_VARIABLE];
  return fromEnv === undefined || fromEnv.trim() === ''
    ? undefined
    : parseShardSelection(fromEnv, SHARD_VARIABLE);
}
