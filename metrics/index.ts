/**
 * The metrics room: the switch's figures as a Prometheus registry (prom-client). It imports nothing of the project;
 * api/metrics-feed.ts feeds it from the event bus and GET /metrics serves it (docs/api.md, "Metrics").
 */
export { SwitchMetrics, type LiveFigures } from './switch-metrics.js';
