// The one way the portal and the console call their JSON APIs: a JSON body out, the reply's JSON back, and a
// failed reply thrown as ApiError with the HTTP status, the body's stable code and its detail as the message.

/** A reply that was not 2xx. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.detail ?? `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = body?.code;
  }
}

/** Sends `body` (if any) as JSON and resolves with the reply parsed (its text when it is not JSON, null if empty). */
export async function requestJson(url, { method = 'GET', body, headers = {} } = {}) {
  const r = await fetch(url, {
    method,
    credentials: 'same-origin',
    headers: { ...(body !== undefined && { 'Content-Type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let data;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}
