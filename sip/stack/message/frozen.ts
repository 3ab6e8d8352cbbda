/**
 * A message kept only to be sent again as it was: its bytes as a one-byte string (latin1 maps each byte to one
 * character and back), one object for the collector to walk instead of a parsed message or a Buffer and its share
 * of a pool slab. What a channel sends is `toBuffer()`, so it passes for the message it was made from.
 */
export class FrozenMessage {
  readonly #bytes: string;

  constructor(bytes: Buffer) {
    this.#bytes = bytes.toString('latin1');
  }

  toBuffer(): Buffer {
    return Buffer.from(this.#bytes, 'latin1');
  }
}
