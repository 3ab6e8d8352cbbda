import { createHash, createHmac } from 'node:crypto';

/**
 * A minimal S3 client: PUT, GET and DELETE of objects, path-style URLs, signed with AWS Signature Version 4
 * (header form, `x-amz-content-sha256` carrying the payload hash). Enough for the asset storage backend; the SDK's
 * several megabytes are not needed for three verbs.
 */
export interface S3Options {
  /** `http(s)://host[:port]` of an S3-compatible service. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  timeoutMs?: number;
}

export class S3Error extends Error {
  readonly code = 'S3_REQUEST_FAILED';
  constructor(
    readonly httpStatus: number,
    message: string,
  ) {
    super(message);
    this.name = 'S3Error';
  }
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/** RFC 3986 unreserved characters stay; everything else is %XX (the SigV4 canonical URI rule), '/' kept. */
const encodePath = (key: string) =>
  key
    .split('/')
    .map((seg) => encodeURIComponent(seg).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');

export class S3Client {
  readonly #o: Required<S3Options>;

  constructor(o: S3Options) {
    this.#o = { timeoutMs: 30_000, ...o, endpoint: o.endpoint.replace(/\/+$/, '') };
  }

  /** The headers of a signed request (exported for a test against a published example). */
  sign(
    method: string,
    url: URL,
    payloadHash: string,
    now: Date,
    extra: Record<string, string> = {},
  ): Record<string, string> {
    const amzDate = now
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d{3}/, '');
    const day = amzDate.slice(0, 8);
    const headers: Record<string, string> = {
      ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k.toLowerCase(), v])),
      host: url.host,
      'x-amz-content-sha256': payloadHash,
      'x-amz-date': amzDate,
    };
    const names = Object.keys(headers).sort();
    const canonicalQuery = [...url.searchParams.entries()]
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
      .sort()
      .join('&');
    const canonical = [
      method,
      url.pathname,
      canonicalQuery,
      names.map((n) => `${n}:${headers[n].trim()}\n`).join(''),
      names.join(';'),
      payloadHash,
    ].join('\n');
    const scope = `${day}/${this.#o.region}/s3/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
    const key = hmac(hmac(hmac(hmac(`AWS4${this.#o.secretAccessKey}`, day), this.#o.region), 's3'), 'aws4_request');
    const signature = createHmac('sha256', key).update(toSign).digest('hex');
    const { host: _host, ...sent } = headers;
    return {
      ...sent,
      authorization: `AWS4-HMAC-SHA256 Credential=${this.#o.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`,
    };
  }

  async #request(method: 'PUT' | 'GET' | 'DELETE', key: string, body?: Buffer): Promise<Response> {
    const url = new URL(`${this.#o.endpoint}/${encodeURIComponent(this.#o.bucket)}/${encodePath(key)}`);
    const headers = this.sign(method, url, sha256(body ?? ''), new Date());
    // Plain fetch, not kit's guarded one: the endpoint is the operator's own storage (storage.s3Endpoint), often on
    // a private address, never a URL a customer chose (docs/security.md, "Outbound URLs").
    return fetch(url, {
      method,
      headers: body ? { ...headers, 'content-type': 'audio/wav' } : headers,
      body: body ? new Uint8Array(body) : undefined,
      signal: AbortSignal.timeout(this.#o.timeoutMs),
    });
  }

  async putObject(key: string, body: Buffer): Promise<void> {
    const res = await this.#request('PUT', key, body);
    const text = await res.text();
    if (!res.ok) throw new S3Error(res.status, `S3 PUT ${key} answered ${res.status}: ${text.slice(0, 300)}`);
  }

  /** The object's bytes, or undefined when there is no such object. */
  async getObject(key: string): Promise<Buffer | undefined> {
    const res = await this.#request('GET', key);
    if (res.status === 404) {
      await res.body?.cancel();
      return undefined;
    }
    if (!res.ok)
      throw new S3Error(res.status, `S3 GET ${key} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    return Buffer.from(await res.arrayBuffer());
  }

  /** Deleting an absent object succeeds, as S3 itself answers 204 for it. */
  async deleteObject(key: string): Promise<void> {
    const res = await this.#request('DELETE', key);
    await res.body?.cancel();
    if (!res.ok && res.status !== 404) throw new S3Error(res.status, `S3 DELETE ${key} answered ${res.status}`);
  }
}
