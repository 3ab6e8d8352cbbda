// The operator console's JSON calls to /console/api, with the anti-forgery header.

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.detail) || `HTTP ${status}`);
    this.status = status;
  }
}

export async function api(method, path, body) {
  const res = await fetch(`/console/api${path}`, {
    method,
    headers: { 'X-Simu-Console': '1', ...(body !== undefined && { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}
