import type { Created, Job, JobRequest, Operations, RequestOptions, Upload, Code } from './operations.gen.js';

export * from './operations.gen.js';

/** The codes of the API's error envelope. */
export declare const ErrorCode: Readonly<{ [C in Code]: C }>;

/** A request the API refused. */
export declare class MediajobsError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The spec's code, `VALIDATION_ERROR`, `RATE_LIMITED`, ... */
  readonly code: Code;
  /** The API's message, which names the offending thing. */
  readonly apiMessage: string;
  /** Retry-After in seconds, when the answer had one. */
  readonly retryAfter: number | undefined;
  /** The request's X-Request-Id. */
  readonly requestId: string | undefined;
  /** Whether the same request may succeed later (after retryAfter). */
  readonly retryable: boolean;
}

export interface ClientConfig {
  /** The service's address, `{base_url}`. */
  baseUrl: string | URL;
  /** An API key, `mj_...`; operations that need none work without it. */
  apiKey?: string;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

export interface SubmitOptions {
  /** Makes retries safe; one is made when absent. */
  idempotencyKey?: string;
  /** Retries of network failures, RATE_LIMITED, SERVICE_UNAVAILABLE and 5xx (default 2). */
  retries?: number;
  signal?: AbortSignal;
}

export interface WaitOptions {
  /** Hears every change of status or progress. */
  onProgress?: (job: Job) => void;
  signal?: AbortSignal;
  /** The first delay between polls, ms (default 500); it grows by half to maxInterval. */
  interval?: number;
  /** The longest delay between polls, ms (default 2000). */
  maxInterval?: number;
}

export interface UploadOptions {
  /** The file's name; a File's own name by default. */
  name?: string;
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** What upload takes: a Blob or File, bytes, a web stream or an async iterable of bytes (a Node stream). */
export type UploadBody = Blob | BufferSource | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** A client of one mediajobs service: a method per operation of the API, and the helpers. */
export declare class Client {
  constructor(config: ClientConfig);
  readonly baseUrl: string;
  /** POST /jobs with an Idempotency-Key, retried safely; answers the created job. */
  submit(job: JobRequest, options?: SubmitOptions): Promise<Created>;
  /** Polls GET /jobs/{id} until the job is complete, failed or cancelled. */
  wait(id: string, options?: WaitOptions): Promise<Job>;
  /** POST /uploads; answers the asset, whose url is usable as a job input. */
  upload(file: UploadBody, options?: UploadOptions): Promise<Upload>;
  /** Fetches an output file by its signed URL. */
  download(file: { url: string } | string, options?: { signal?: AbortSignal }): Promise<Response>;
}
export interface Client extends Omit<Operations, 'upload'> {}

/** A delivery that does not verify. */
export declare class WebhookVerificationError extends Error {
  readonly reason: 'signature-missing' | 'timestamp' | 'signature-mismatch';
}

export interface VerifyOptions {
  /** How far X-Service-Timestamp may be from now, seconds (default 300). */
  tolerance?: number;
  /** The clock, Unix ms. */
  now?: number;
}

/** The headers of a delivery: a Headers, or an object such as Node's IncomingHttpHeaders. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * Checks a webhook delivery against its raw body with the endpoint's secret (or the new and the
 * old one while you rotate) and answers the parsed event; throws WebhookVerificationError.
 */
export declare function verifyWebhook<T = unknown>(
  secret: string | string[],
  headers: WebhookHeaders,
  body: string | BufferSource,
  options?: VerifyOptions,
): Promise<T>;

export type { RequestOptions };
