// Package metrics exports relq's queue state to Prometheus.
//
// A Collector reads backend.Backend.Stats for every topic and group at scrape time, so the
// numbers are Redis's, global across every publisher and subscriber process, and nothing
// runs between scrapes. Register it with a prometheus.Registerer and serve the registry with
// promhttp; docs/metrics.md lists the metrics and gives alert rules.
//
// When a backend cannot be read (Redis down, timeout, ACL error) the collector reports
// relq_stats_up 0 for it and leaves out its other series, the convention of Prometheus
// exporters: the scrape itself still succeeds, so the application's other metrics and the up
// gauge stay visible. A scrape never takes longer than CollectorConfig.Timeout.
//
// These are the queue-side metrics, read from Redis; the middleware package's Metrics
// middleware measures the handler side, inside each process.
package metrics
