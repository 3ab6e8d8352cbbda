import type { Socket } from 'node:dgram';

/** What a receive buffer is widened to: a burst of about a thousand datagrams of a few KB. */
export const WIDE_RECEIVE_BUFFER = 4 * 1024 * 1024;

/**
 * Widens a bound UDP socket's receive buffer so that a burst arriving while the event loop is busy (a load test, a
 * retransmission storm, a few hundred ms of garbage collection) waits in the kernel instead of being dropped. The
 * kernel caps it at net.core.rmem_max; that is not an error. Returns the size the kernel granted (0 if unknown).
 */
export function widenReceiveBuffer(socket: Socket, bytes = WIDE_RECEIVE_BUFFER): number {
  try {
    socket.setRecvBufferSize(bytes);
    return socket.getRecvBufferSize();
  } catch {
    return 0;
  }
}
