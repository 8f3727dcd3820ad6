package streams_test

import (
	"testing"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/redistest"
)

// TestConformancePartitioned runs the shared suite on topics of 4 partitions of the streams
// backend.
func TestConformancePartitioned(t *testing.T) {
	conformance.Run(t, adaptertest.Partitioned(buildFormat(streams.FormatNative), 4))
}

// TestConformancePartitionedOnCluster runs it on a 3-primary Redis Cluster, whose primaries
// the 4 partitions of every topic spread over.
func TestConformancePartitionedOnCluster(t *testing.T) {
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: -1})
	conformance.Run(t, adaptertest.PartitionedOnCluster(buildFormat(streams.FormatNative), 4, cluster))
}
