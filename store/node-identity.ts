/**
 * The node (switch process) whose calls this process writes: set once by the switch at start, written on every
 * call row it inserts, so that when the node dies a survivor finds the calls to close (store/nodes.ts).
 */
let nodeId: string | null = null;

export function setStoreNodeId(id: string | null): void {
  nodeId = id;
}

export function storeNodeId(): string | null {
  return nodeId;
}
