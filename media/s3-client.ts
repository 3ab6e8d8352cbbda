import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * A minimal S3 client: PUT, GET and DELETE of objects, signed with AWS Signature Version 4 by AWS's own signer
 * (@smithy/signature-v4, header form, `x-amz-content-sha256` carrying the payload hash). Path-style URLs by default
 * (what S3-compatible services such as MinIO expect), virtual-hosted style on request; temporary credentials carry
 * their session token. Enough for the asset storage backend; the SDK's several megabytes are not needed for three
 * verbs.
 */
export interface S3Options {
  /** `http(s)://host[:port]` of an S3-compatible service. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The session token of temporary credentials (STS, an instance role); sent as `x-amz-security-token`. */
  sessionToken?: string;
  /** Address the bucket as a host name (`bucket.endpoint-host/key`) instead of a path (`endpoint/bucket/key`). */
  virtualHostedStyle?: boolean;
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

/** The hash the signer asks for (SHA-256, or HMAC-SHA-256 with a key), from node:crypto. */
class NodeSha256 {
  readonly #secret: string | Uint8Array | undefined;
  #hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#secret =
      secret === undefined || typeof secret === 'string'
        ? secret
        : ArrayBuffer.isView(secret)
          ? new Uint8Array(secret.buffer, secret.byteOffset, secret.byteLength)
          : new Uint8Array(secret);
    this.#hash = this.#fresh();
  }
  #fresh() {
    return this.#secret === undefined ? createHash('sha256') : createHmac('sha256', this.#secret);
  }
  update(data: string | Uint8Array): void {
    this.#hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
  reset(): void {
    this.#hash = this.#fresh();
  }
}

/** RFC 3986 unreserved characters stay; everything else is %XX (the SigV4 canonical URI rule), '/' kept. */
const encodePath = (key: string) =>
  key
    .split('/')
    .map((seg) => encodeURIComponent(seg).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');

export class S3Client {
  readonly #o: Required<Omit<S3Options, 'sessionToken'>>;
  readonly #signer: SignatureV4;

  constructor(o: S3Options) {
    this.#o = { timeoutMs: 30_000, virtualHostedStyle: false, ...o, endpoint: o.endpoint.replace(/\/+$/, '') };
    this.#signer = new SignatureV4({
      credentials: {
        accessKeyId: o.accessKeyId,
        secretAccessKey: o.secretAccessKey,
        ...(o.sessionToken ? { sessionToken: o.sessionToken } : {}),
      },
      region: o.region,
      service: 's3',
      sha256: NodeSha256,
      // S3 signs the path as sent, not encoded a second time (the SigV4 exception for S3).
      uriEscapePath: false,
      applyChecksum: false,
    });
  }

  /** The headers of a signed request (exported for a test against a published example). */
  async sign(
    method: string,
    url: URL,
    payloadHash: string,
    now: Date,
    extra: Record<string, string> = {},
  ): Promise<Record<string, string>> {
    const signed = await this.#signer.sign(
      {
        method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: {
          ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k.toLowerCase(), v])),
          host: url.host,
          'x-amz-content-sha256': payloadHash,
        },
      },
      { signingDate: now },
    );
    // fetch sets Host itself, from the URL.
    const { host: _host, ...sent } = signed.headers;
    return sent;
  }

  /** The URL of the object `key`, path-style or virtual-hosted. */
  objectUrl(key: string): URL {
    if (!this.#o.virtualHostedStyle)
      return new URL(`${this.#o.endpoint}/${encodeURIComponent(this.#o.bucket)}/${encodePath(key)}`);
    const url = new URL(`${this.#o.endpoint}/${encodePath(key)}`);
    url.hostname = `${this.#o.bucket}.${url.hostname}`;
    return url;
  }

  async #request(method: 'PUT' | 'GET' | 'DELETE', key: string, body?: Buffer): Promise<Response> {
    const url = this.objectUrl(key);
    const headers = await this.sign(method, url, sha256(body ?? ''), new Date());
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
