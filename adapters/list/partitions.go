package list

import "github.com/relq/relq/internal/partition"

// init tells relq's partitioned topics how this backend names a topic's keys ({prefix:topic}).
func init() {
	partition.Register(func(x any) (partition.Config, bool) {
		b, ok := x.(*Backend)
		if !ok {
			return partition.Config{}, false
		}
		return partition.NativeConfig(b.e.Client(), b.e.Prefix(), 0), true
	})
}
