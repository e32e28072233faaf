/**
 * `--job NAME` selection, shared by every command.
 */
import type { JobConfig, TidemarkConfig } from '../config/schema.js';
import { ConfigError } from '../errors.js';

/** Jobs selected by --job (all when absent); an unknown name is a usage error. */
export function selectJobs(config: TidemarkConfig, names: string[] | undefined): JobConfig[] {
  if (!names || names.length === 0) return config.jobs;
  return names.map((name) => {
    const job = config.jobs.find((j) => j.name === name);
    if (!job) {
      throw new ConfigError(
        `no job named ${JSON.stringify(name)} in the config (jobs: ${config.jobs.map((j) => j.name).join(', ')})`,
        { field: 'job' },
      );
    }
    return job;
  });
}
