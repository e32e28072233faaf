/**
 * The options every command shares: --config, --job, --json, --log-level.
 */
import { Option, type Command } from 'commander';

export interface CommonFlags {
  config: string;
  job?: string[];
  json?: boolean;
  logLevel?: string;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** `-j, --job NAME`, repeatable. */
export function jobOption(description = 'only this job (repeatable)'): Option {
  return new Option('-j, --job <name>', description).argParser(collect);
}

/**
 * Add --config, --json, --log-level and (unless `job: false`) a repeatable --job; `json` says
 * what --json prints where it is not one object per job (show prints rows).
 */
export function withCommonOptions(
  command: Command,
  opts: { job?: boolean; json?: string } = {},
): Command {
  command.addOption(new Option('-c, --config <file>', 'config file').default('tidemark.yaml'));
  if (opts.job !== false) command.addOption(jobOption());
  return command
    .addOption(new Option('--json', opts.json ?? 'print one JSON object per job on stdout'))
    .addOption(
      new Option('--log-level <level>', 'log level').choices([
        'trace',
        'debug',
        'info',
        'warn',
        'error',
        'silent',
      ]),
    );
}
