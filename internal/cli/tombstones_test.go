package cli

import (
	"strings"

	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/keys"
)

// keysLeft are topicKeys less the tombstones key a group delete leaves, once it is asserted
// to expire within the default TombstoneTTL (adaptertest.WithoutTombstones): what a delete
// may leave behind, and only for a while.
func (f *fixture) keysLeft(topic string) []string {
	f.t.Helper()
	tag := keys.Tag(f.prefix, topic)
	var short []string
	for _, k := range f.topicKeys(topic) {
		short = append(short, strings.TrimPrefix(k, tag+":"))
	}
	return adaptertest.WithoutTombstones(f.t, f.ctx, f.c, tag, short)
}
