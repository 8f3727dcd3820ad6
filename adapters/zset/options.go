package zset

import "github.com/relq/relq/backend"

// Defaults of Options.
const (
	// PrefixDefault starts every key of the backend.
	PrefixDefault = backend.PrefixDefault
	// BatchSizeDefault bounds the ids one script call handles.
	BatchSizeDefault = backend.BatchSizeDefault
)

// Options configure a zset Backend: Prefix (every key starts with the hash tag
// {prefix:topic}; PrefixDefault), BatchSize (the most ids one script call handles;
// BatchSizeDefault), and BacklogLimit and BacklogTTL (the bounds of a topic's backlog, kept
// while it has no group: backend.BacklogLimitDefault, backend.BacklogTTLDefault). The list
// backend takes the same options.
type Options = backend.Options
