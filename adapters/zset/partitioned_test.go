package zset_test

import (
	"testing"

	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/adaptertest"
)

// TestConformancePartitioned runs the shared suite on topics of 4 partitions of the zset
// backend.
func TestConformancePartitioned(t *testing.T) {
	conformance.Run(t, adaptertest.Partitioned(build, 4))
}
