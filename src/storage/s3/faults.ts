/**
 * What an S3 failure means: transient (a later attempt may succeed) or permanent, throttling or
 * a timeout (they cost more of the retry budget), and how it reads in a message. Decided by
 * status, S3 error code and errno, never by message text.
 */
import { StorageError, TidemarkError } from '../../errors.js';
import type { ErrorKind } from '../../errors.js';

/** S3 error codes that a later attempt may not meet. */
export const TRANSIENT_CODES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'RequestTimeout',
  'RequestTimeoutException',
  'InternalError',
  'ServiceUnavailable',
  'TimeoutError',
  // Signed with a clock off by more than 15 minutes: S3 names its own time in the error, the SDK
  // sets the client's clock offset from it, and the next attempt is signed in time (the SDK's own
  // retries, which used to resend it, are off).
  'RequestTimeTooSkewed',
  // The upload's bytes did not match the checksum it carried (./checksums.ts): damaged on the way,
  // so sent again (AWS's code, and MinIO's for an x-amz-checksum header).
  'BadDigest',
  'XAmzContentChecksumMismatch',
]);

/** S3 asks the client to slow down: back off longer than for other faults. */
const THROTTLING_CODES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
]);

/** Network-level errno codes: the connection broke, before or after the store acted. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/** How a failed attempt is treated by the retry policy. */
export interface Fault {
  transient: boolean;
  /** 503 SlowDown and friends: back off from a longer base delay. */
  throttle: boolean;
  /** Connect, request or idle timeout: costs twice the retry budget (it held a connection long). */
  timeout: boolean;
}

/** Classify a failed attempt (an SDK error, a Node stream error, or a StorageError). */
export function classify(err: unknown): Fault {
  const status = statusOf(err);
  const code = codeOf(err);
  const errno = errnoOf(err);
  // The SDK's handler names resets `TimeoutError` too; the errno tells them apart.
  const reset = errno === 'ECONNRESET' || errno === 'EPIPE';
  const timeout =
    !reset &&
    (nameOf(err) === 'TimeoutError' || errno === 'ETIMEDOUT' || code === 'RequestTimeout');
  const throttle = status === 429 || (code !== undefined && THROTTLING_CODES.has(code));
  return { transient: kindOf(err, status, code) === 'transient', throttle, timeout };
}

/** 'transient' when a later attempt may succeed; 4xx (but 408/429) and unknown errors are terminal. */
export function kindOf(err: unknown, status = statusOf(err), code = codeOf(err)): ErrorKind {
  if (err instanceof TidemarkError) return err.kind;
  const errno = errnoOf(err);
  if (errno !== undefined && NETWORK_CODES.has(errno)) return 'transient';
  if (nameOf(err) === 'TimeoutError') return 'transient';
  if (code && TRANSIENT_CODES.has(code)) return 'transient';
  if (status !== undefined && (status >= 500 || status === 429 || status === 408))
    return 'transient';
  if ((err as { $retryable?: unknown } | null)?.$retryable) return 'transient';
  // Any other answer after which the SDK corrected the client's clock (its Date header was far off).
  if (
    (err as { $metadata?: { clockSkewCorrected?: unknown } } | null)?.$metadata?.clockSkewCorrected
  )
    return 'transient';
  return 'terminal';
}

/** A few words for a failed attempt: `HTTP 503 SlowDown`, `ECONNRESET`, `TimeoutError`. */
export function describeFault(err: unknown): string {
  if (err instanceof StorageError && typeof err.context['fault'] === 'string')
    return err.context['fault'];
  const status = statusOf(err);
  const code = codeOf(err);
  const errno = errnoOf(err);
  const parts = [
    status ? `HTTP ${status}` : undefined,
    code,
    errno && errno !== code ? errno : undefined,
  ];
  return parts.filter(Boolean).join(' ') || (err instanceof Error ? err.name : 'unknown error');
}

export function statusOf(err: unknown): number | undefined {
  if (err instanceof StorageError) return err.context['status'] as number | undefined;
  return (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

/** S3 error code (`SlowDown`, `NoSuchKey`), else the errno or error name. */
export function codeOf(err: unknown): string | undefined {
  if (err instanceof StorageError) return err.context['code'] as string | undefined;
  const e = err as { Code?: unknown; code?: unknown; name?: unknown } | null;
  const code = e?.Code ?? e?.code ?? e?.name;
  return typeof code === 'string' ? code : undefined;
}

function errnoOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function nameOf(err: unknown): string | undefined {
  const name = (err as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : undefined;
}

export function isNotFound(err: unknown): boolean {
  return statusOf(err) === 404;
}

export function isAbort(err: unknown): boolean {
  return nameOf(err) === 'AbortError';
}

/** Where a failure happened, for messages and error context. */
export interface FailedCall {
  op: string;
  key: string;
  uri: string;
  extra?: Record<string, unknown>;
}

/**
 * An SDK or network error as a StorageError (404s carry `notFound`, status and code). The SDK's
 * message is left out on purpose (but for missing credentials, see credentialsWhy): the code and
 * status say what happened, and nothing from the request (signatures, headers) can leak into logs.
 */
export function mapS3Error(err: unknown, call: FailedCall): unknown {
  if (err instanceof TidemarkError || isAbort(err)) return err;
  hideRawResponse(err);
  const status = statusOf(err);
  const code = codeOf(err);
  const what = [code, status ? `HTTP ${status}` : undefined].filter(Boolean).join(', ');
  const { op, key, uri } = call;
  return new StorageError(
    `[storage] S3 ${op} failed for ${JSON.stringify(key)} in ${uri}${what ? `: ${what}` : ''}${credentialsWhy(err)}${hint(status)}${checksumHint(op, status, code)}`,
    {
      kind: kindOf(err, status, code),
      context: {
        key,
        uri,
        status,
        code,
        requestId: (err as { $metadata?: { requestId?: string } } | null)?.$metadata?.requestId,
        ...(status === 404 ? { notFound: true } : {}),
        ...call.extra,
      },
      cause: err,
    },
  );
}

/**
 * Fields the SDK copies onto its errors that can hold credentials: the raw HTTP exchange
 * (`$response`, which references the signed request and its Authorization header), and what S3
 * echoes in an InvalidAccessKeyId or SignatureDoesNotMatch answer (the key id, the string to
 * sign, the canonical request with its `x-amz-security-token` header).
 */
const CREDENTIAL_FIELDS = [
  '$response',
  'AWSAccessKeyId',
  'StringToSign',
  'StringToSignBytes',
  'SignatureProvided',
  'CanonicalRequest',
  'CanonicalRequestBytes',
];

/**
 * Keep those fields for debugging but make them non-enumerable, so loggers, `util.inspect` and
 * test reporters that serialise `cause` do not print them.
 */
export function hideRawResponse(err: unknown): void {
  if (!err || typeof err !== 'object') return;
  for (const field of CREDENTIAL_FIELDS) {
    if (Object.prototype.propertyIsEnumerable.call(err, field))
      Object.defineProperty(err, field, { enumerable: false });
  }
}

/**
 * The credential chain's own explanation ("Could not load credentials from any providers", "The
 * SSO session … has expired"): it says what to fix and, raised before any request is signed,
 * holds no secret, unlike the SDK's other messages.
 */
function credentialsWhy(err: unknown): string {
  if (nameOf(err) !== 'CredentialsProviderError' || !(err instanceof Error) || err.message === '')
    return '';
  return `: ${err.message} (credentials come from the AWS default chain: environment, profile, SSO, instance role)`;
}

/** Codes a store may answer an upload whose checksum header it does not take. */
const CHECKSUM_REFUSALS = new Set([
  'InvalidArgument',
  'InvalidRequest',
  'NotImplemented',
  'InvalidDigest',
  'BadDigest',
  'XAmzContentChecksumMismatch',
]);

/** For an upload a store refused: the setting that changes the checksum it carries. */
function checksumHint(op: string, status: number | undefined, code: string | undefined): string {
  const upload = op === 'write' || op === 'upload' || op === 'writeIfAbsent';
  if (
    !upload ||
    (status !== 400 && status !== 501) ||
    code === undefined ||
    !CHECKSUM_REFUSALS.has(code)
  )
    return '';
  return ' (if the store does not take the checksum tidemark sends with uploads, set storage.uploadChecksum to another algorithm, or off)';
}

/** A short pointer for the errors users can fix themselves. */
function hint(status: number | undefined): string {
  if (status === 403)
    return ' (access denied: check the credentials from the SDK default chain and the bucket policy)';
  if (status === 301) return ' (wrong region for this bucket: set the region)';
  return '';
}
