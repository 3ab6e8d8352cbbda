/**
 * One AbortError for the aborts whose reason nobody reads. `AbortController.abort()` without a reason builds a new
 * DOMException each time, stack trace and all, on every call's path. Code that tells aborts apart by their reason
 * (a CancelReason on a CANCEL, a timeout's TimeoutError) passes its own reason and is unaffected.
 */
export const ABORTED = new DOMException('This operation was aborted', 'AbortError');

/** Aborts `controller` with the shared AbortError. */
export function abortQuietly(controller: AbortController): void {
  controller.abort(ABORTED);
}

/** The reason of a deadline's abort (`name` is 'TimeoutError', as AbortSignal.timeout's). */
export const TIMED_OUT = new DOMException('The operation timed out', 'TimeoutError');
