package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// adminFields is how many values admin_out (engine.lua) returns per message.
const adminFields = 11

// decodeMessages decodes admin_out's values per message, measured against the script's
// clock reading now (ms).
func decodeMessages(topic, group string, now any, flat []any) []backend.MessageInfo {
	at := backendkit.Int(now)
	out := make([]backend.MessageInfo, 0, len(flat)/adminFields)
	for i := 0; i+adminFields <= len(flat); i += adminFields {
		v := flat[i : i+adminFields]
		m := backend.MessageInfo{
			ID:       str(v[0]),
			Topic:    topic,
			Group:    group,
			State:    backend.MessageState(str(v[1])),
			Attempts: int(backendkit.Int(v[2])),
			Priority: int(backendkit.Int(v[3])),
			Consumer: str(v[5]),
			Reason:   str(v[8]),
		}
		if due := backendkit.Int(v[4]); due > 0 && m.State == backend.StateDelayed {
			m.Due = time.UnixMilli(due)
		}
		if deadline := backendkit.Int(v[6]); deadline > 0 {
			m.LeaseLeft = time.Duration(deadline-at) * time.Millisecond
		}
		if since := backendkit.Int(v[7]); since > 0 {
			m.Since = time.UnixMilli(since)
		}
		if dead := backendkit.Int(v[9]); dead > 0 {
			m.DeadAt = time.UnixMilli(dead)
		}
		if body, ok := v[10].(string); ok {
			if env, err := backend.DecodeEnvelope([]byte(body)); err == nil {
				m.Envelope = env
			} else {
				m.Raw, m.Err = []byte(body), err
			}
		} else {
			m.BodyMissing = true
		}
		out = append(out, m)
	}
	return out
}

// adminError translates the RELQ<what> error replies of the Admin scripts.
func (e *Engine) adminError(err error, topic, group, id string) error {
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) {
		return err
	}
	what, ok := strings.CutPrefix(rerr.Error(), "RELQ")
	if !ok {
		return err
	}
	what, _, _ = strings.Cut(what, " ")
	switch what {
	case "NOGROUP":
		return fmt.Errorf("%w: group %q of topic %q", backend.ErrGroupNotFound, group, topic)
	case "NOTFOUND":
		return fmt.Errorf("%w: message %s of group %q of topic %q", backend.ErrMessageNotFound, id, group, topic)
	case "NOTDELAYED":
		return fmt.Errorf("%w: message %s of group %q of topic %q", backend.ErrNotDelayed, id, group, topic)
	case "BADCURSOR":
		return fmt.Errorf("%w: no listing of group %q of topic %q returned it", backend.ErrBadCursor, group, topic)
	case "DEEP":
		if id != "" {
			return fmt.Errorf("%w: message %s is not among the first %d of group %q of topic %q that the %s backend looks through, and may be deeper",
				backend.ErrTooDeep, id, AdminDepth, group, topic, e.store.Name)
		}
		return fmt.Errorf("%w: the %s backend lists ready messages only within %d of the consume end (group %q of topic %q)",
			backend.ErrTooDeep, e.store.Name, AdminDepth, group, topic)
	}
	return err
}
