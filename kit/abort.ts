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

/**
 * A signal that aborts with TIMED_OUT after `ms`, and `done()` to cancel it: AbortSignal.timeout's behaviour for
 * one exchange whose end is known. AbortSignal.timeout keeps its signal weakly (a weak reference and a finalizer per
 * call), about 5 µs and collector work each: a status callback made one per attempt, 13 a carrier call.
 */
export function deadline(ms: number): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(TIMED_OUT), ms);
  return { signal: controller.signal, done: () => clearTimeout(timer) };
}
