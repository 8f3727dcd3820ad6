package streams_test

import (
	"testing"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/adaptertest"
)

// TestConformancePartitioned runs the shared suite on topics of 4 partitions of the streams
// backend.
func TestConformancePartitioned(t *testing.T) {
	conformance.Run(t, adaptertest.Partitioned(buildFormat(streams.FormatNative), 4))
}
