import type { Config, Logger } from '../../config/index.js';
import type { EventPublisher } from '../../events/index.js';
import type { MediaService } from '../../media/index.js';
import type { SipApplication } from '../../sip/index.js';
import type { Admission } from '../../billing/index.js';
import type { Db } from '../../store/index.js';

/** What every call flow needs; built once by the engine. */
export interface FlowDeps {
  db: Db;
  config: Config;
  log: Logger;
  media: MediaService;
  sip: SipApplication;
  events: EventPublisher;
  admission: Admission;
}
