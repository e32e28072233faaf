/**
 * Scrub secrets from text before it reaches a log line, an error message or --json output:
 * AWS access keys, secret keys and session tokens from the environment, and signed-URL query parts.
 */

const SIGNED_URL_PARAMS =
  /([?&](?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|Signature|AWSAccessKeyId)=)[^&\s"']+/gi;
const ACCESS_KEY_ID = /\b(AKIA|ASIA)[A-Z0-9]{16}\b/g;

/** Secret values known to this process (from the standard AWS environment variables). */
function knownSecrets(): string[] {
  return ['AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_ACCESS_KEY_ID']
    .map((name) => process.env[name])
    .filter((v): v is string => typeof v === 'string' && v.length >= 8);
}

/** Text with secrets replaced by `[redacted]`. */
export function redactText(text: string): string {
  let out = text
    .replace(SIGNED_URL_PARAMS, '$1[redacted]')
    .replace(ACCESS_KEY_ID, '[redacted-key-id]');
  for (const secret of knownSecrets()) out = out.split(secret).join('[redacted]');
  return out;
}

/** Deep copy of a JSON-like value with every string redacted. */
export function redactValue<T>(value: T): T {
  if (typeof value === 'string') return redactText(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactValue(v)) as T;
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactValue(v);
    return out as T;
  }
  return value;
}
