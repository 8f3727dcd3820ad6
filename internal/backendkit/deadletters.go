package backendkit

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
)

// DeadLettersCountDefault is the page size when DeadLettersParams.Count is zero.
const DeadLettersCountDefault = 100

// DeadLettersCount is the page size to read for DeadLettersParams.Count.
func DeadLettersCount(count int) int {
	if count <= 0 {
		return DeadLettersCountDefault
	}
	return count
}

// DecodeDeadLetters decodes the flat {id, dead at ms, reason, attempts, body or false, ...}
// reply of the list and zset deadletters.lua. A body that does not decode comes back in Raw.
func DecodeDeadLetters(topic, group string, flat []any) []backend.DeadLetter {
	out := make([]backend.DeadLetter, 0, len(flat)/5)
	for i := 0; i+4 < len(flat); i += 5 {
		id, _ := flat[i].(string)
		reason, _ := flat[i+2].(string)
		dl := backend.DeadLetter{
			ID:       id,
			Topic:    topic,
			Group:    group,
			Reason:   reason,
			Attempts: int(Int(flat[i+3])),
			DeadAt:   time.UnixMilli(Int(flat[i+1])),
		}
		if body, ok := flat[i+4].(string); ok {
			if env, err := backend.DecodeEnvelope([]byte(body)); err == nil {
				dl.Envelope = env
			} else {
				dl.Raw = []byte(body)
			}
		}
		out = append(out, dl)
	}
	return out
}

// Requeue runs the list and zset requeue.lua for p, once p.Validate accepts it: with p.All,
// the batch oldest dead letters per call until a call finds fewer; else p.IDs in chunks of
// batch. ARGV is batch, then the ids (none: the oldest); the script returns {dead letters it
// looked at, requeued}. It returns how many were requeued, those of the calls that succeeded
// included when one fails.
func Requeue(ctx context.Context, client redis.Scripter, script *redis.Script, keys []string, batch int, p *backend.RequeueParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	total := 0
	if p.All {
		for {
			n, err := Ints(script.Run(ctx, client, keys, batch).Slice())
			if err != nil {
				return total, err
			}
			total += int(n[1])
			if n[0] < int64(batch) {
				return total, nil
			}
		}
	}
	for ids := range slices.Chunk(p.IDs, batch) {
		args := make([]any, 0, 1+len(ids))
		args = append(args, batch)
		for _, id := range ids {
			args = append(args, id)
		}
		n, err := Ints(script.Run(ctx, client, keys, args...).Slice())
		if err != nil {
			return total, err
		}
		total += int(n[1])
	}
	return total, nil
}

// Purge runs an adapter's purge.lua for p, once p.Validate accepts it. By IDs: p.IDs in
// chunks of batch, each call with ARGV batch, then extra, then the chunk; the script purges
// those that are dead letters and returns how many. With p.All: ARGV n (at most batch) then
// extra, until a call deletes fewer than it was asked to or p.Limit (when positive) are
// deleted. It returns how many were deleted in all (so far, when a call fails).
func Purge(ctx context.Context, client redis.Scripter, script *redis.Script, keys []string, batch int, p *backend.PurgeParams, extra ...any) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	limit := p.Limit
	total := 0
	if len(p.IDs) > 0 {
		for ids := range slices.Chunk(p.IDs, batch) {
			args := make([]any, 0, 1+len(extra)+len(ids))
			args = append(append(args, batch), extra...)
			for _, id := range ids {
				args = append(args, id)
			}
			got, err := script.Run(ctx, client, keys, args...).Int()
			if err != nil {
				return total, err
			}
			total += got
		}
		return total, nil
	}
	for limit == 0 || total < limit {
		n := batch
		if limit > 0 {
			n = min(n, limit-total)
		}
		got, err := script.Run(ctx, client, keys, append([]any{n}, extra...)...).Int()
		if err != nil {
			return total, err
		}
		total += got
		if got < n {
			break
		}
	}
	return total, nil
}
