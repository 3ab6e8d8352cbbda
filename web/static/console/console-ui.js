// The operator console's JSON calls to /console/api, with the anti-forgery header.
import { ApiError, requestJson } from './http-json.js';

export { ApiError };

export async function api(method, path, body) {
  const data = await requestJson(`/console/api${path}`, { method, body, headers: { 'X-Simu-Console': '1' } });
  return data !== null && typeof data === 'object' ? data : {};
}
